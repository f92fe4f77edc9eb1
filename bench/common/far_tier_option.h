// --far-tier of the benchmarks (calico_bench tpcc, ycsb's calico store): remote-numa, cxl
// (emulated, docs/results/tiers.md), local, or numa:<node> (TierConfig::named).
#pragma once

#include <stdexcept>
#include <string>

#include "calico/error.h"
#include "memory/tiers/tier_config.h"

namespace calico::bench {

// Errors: std::invalid_argument naming the option and its value.
inline memory::tiers::TierConfig far_tier_option(const std::string& kind, uint64_t frames) {
  try {
    return memory::tiers::TierConfig::named(kind, frames);
  } catch (const Error&) {
    throw std::invalid_argument("--far-tier '" + kind + "' is not remote-numa, cxl, local or numa:<node>");
  }
}

}  // namespace calico::bench
