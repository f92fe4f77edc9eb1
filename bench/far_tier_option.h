// --far-tier of the benchmarks (calico_bench tpcc, ycsb's calico store): remote-numa, cxl
// (emulated, docs/tiers.md), local, or numa:<node>.
#pragma once

#include <stdexcept>
#include <string>

#include "memory/tiers/tier_config.h"

namespace calico::bench {

// Errors: std::invalid_argument naming the value.
inline memory::tiers::TierConfig far_tier_option(const std::string& kind, uint64_t frames) {
  using memory::tiers::TierConfig;
  if (kind == "remote-numa") return TierConfig::remote_numa(frames);
  if (kind == "cxl") return TierConfig::cxl(frames);
  if (kind == "local") return TierConfig::local(frames);
  if (kind.rfind("numa:", 0) == 0) {
    try {
      return TierConfig::numa(frames, std::stoi(kind.substr(5)));
    } catch (const std::logic_error&) {
    }
  }
  throw std::invalid_argument("--far-tier '" + kind + "' is not remote-numa, cxl, local or numa:<node>");
}

}  // namespace calico::bench
