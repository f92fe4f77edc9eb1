// TierConfig: see tier_config.h.
#include "memory/tiers/tier_config.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "calico/error.h"
#include "memory/tiers/numa_binding.h"

namespace calico::memory::tiers {
namespace {

[[noreturn]] void invalid(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, what); }

}  // namespace

const char* to_string(TierKind kind) {
  switch (kind) {
    case TierKind::kLocal: return "local";
    case TierKind::kEmulated: return "emulated";
    case TierKind::kNuma: return "numa";
  }
  return "unknown";
}

TierConfig TierConfig::local(uint64_t frames, size_t page_size) {
  TierConfig c;
  c.kind = TierKind::kLocal;
  c.frames = frames;
  c.page_size = page_size;
  return c;
}

TierConfig TierConfig::remote_numa(uint64_t frames, size_t page_size) {
  TierConfig c;
  c.kind = TierKind::kEmulated;
  c.frames = frames;
  c.page_size = page_size;
  c.extra_latency_ns = kRemoteNumaExtraLatencyNs;
  c.migration_bytes_per_s = kRemoteNumaMigrationBytesPerS;
  return c;
}

TierConfig TierConfig::cxl(uint64_t frames, size_t page_size) {
  TierConfig c = remote_numa(frames, page_size);
  c.extra_latency_ns = kCxlExtraLatencyNs;
  c.migration_bytes_per_s = kCxlMigrationBytesPerS;
  return c;
}

TierConfig TierConfig::numa(uint64_t frames, int node, size_t page_size) {
  TierConfig c;
  c.kind = TierKind::kNuma;
  c.frames = frames;
  c.page_size = page_size;
  c.numa_node = node;
  return c;
}

TierConfig TierConfig::named(std::string_view name, uint64_t frames, size_t page_size) {
  if (name == "remote-numa") return remote_numa(frames, page_size);
  if (name == "cxl") return cxl(frames, page_size);
  if (name == "local") return local(frames, page_size);
  if (name.starts_with("numa:") && name.size() > 5 && name.size() <= 9) {
    int node = 0;
    bool digits = true;
    for (char ch : name.substr(5)) {
      digits = digits && ch >= '0' && ch <= '9';
      node = node * 10 + (ch - '0');
    }
    if (digits) return numa(frames, node, page_size);
  }
  invalid(fmt::format("far tier '{}' is not remote-numa, cxl, local or numa:<node>", name));
}

std::string TierConfig::describe() const {
  std::string what;
  switch (kind) {
    case TierKind::kLocal: what = "local"; break;
    case TierKind::kEmulated:
      what = fmt::format("emulated(+{} ns/line, {}, burst {} KiB)", extra_latency_ns,
                         migration_bytes_per_s == 0 ? std::string("unthrottled")
                                                    : fmt::format("{:.0f} MB/s", migration_bytes_per_s / 1e6),
                         burst_bytes >> 10);
      break;
    case TierKind::kNuma: what = fmt::format("numa(node {})", numa_node); break;
  }
  return fmt::format("{}, {} x {} B", what, frames, page_size);
}

void validate(const TierConfig& c) {
  const char* kind = to_string(c.kind);
  if (c.kind != TierKind::kLocal && c.kind != TierKind::kEmulated && c.kind != TierKind::kNuma) {
    invalid("unknown tier kind " + std::to_string(static_cast<int>(c.kind)));
  }
  if (c.frames == 0) invalid(fmt::format("a {} tier needs at least one frame (frames = 0)", kind));
  if (c.page_size != 4096 && c.page_size != 8192 && c.page_size != 16384) {
    invalid(fmt::format("{} tier: page size {} is not 4096, 8192 or 16384", kind, c.page_size));
  }
  if (c.frames > kMaxTierFrames) {
    invalid(fmt::format("{} tier: {} frames exceed the {} that 32-bit frame ids can name", kind, c.frames,
                        kMaxTierFrames));
  }
  // frames <= 2^32 and page_size <= 2^14: the product cannot overflow 64 bits.
  const uint64_t bytes = c.bytes();
  if (bytes > kMaxTierBytes) {
    invalid(fmt::format("{} tier: {} frames of {} B need {} bytes of address space, more than the {} bytes (32 TiB) "
                        "one tier may take",
                        kind, c.frames, c.page_size, bytes, kMaxTierBytes));
  }
  struct rlimit as;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && bytes > as.rlim_cur) {
    invalid(fmt::format("{} tier: {} frames of {} B need {} bytes of address space, more than the process's "
                        "RLIMIT_AS of {} bytes",
                        kind, c.frames, c.page_size, bytes, static_cast<uint64_t>(as.rlim_cur)));
  }
  if (c.kind == TierKind::kEmulated) {
    if (!std::isfinite(c.extra_latency_ns) || c.extra_latency_ns < 0 || c.extra_latency_ns > kMaxExtraLatencyNs) {
      invalid(fmt::format("emulated tier: extra latency {} ns per cache line is not in [0, {}]", c.extra_latency_ns,
                          kMaxExtraLatencyNs));
    }
    const double bw = c.migration_bytes_per_s;
    if (!std::isfinite(bw) || (bw != 0 && (bw < kMinMigrationBytesPerS || bw > kMaxMigrationBytesPerS))) {
      invalid(fmt::format("emulated tier: migration bandwidth {} bytes/s is neither 0 (unthrottled) nor in [{}, {}]",
                          bw, kMinMigrationBytesPerS, kMaxMigrationBytesPerS));
    }
    if (bw != 0 && (c.burst_bytes < c.page_size || c.burst_bytes > kMaxBurstBytes)) {
      invalid(fmt::format("emulated tier: burst of {} bytes is not in [page size {}, {}]", c.burst_bytes, c.page_size,
                          kMaxBurstBytes));
    }
  }
  if (c.kind == TierKind::kNuma) {
    if (c.numa_node < 0 || c.numa_node >= kMaxNumaNodes) {
      invalid(fmt::format("numa tier: NUMA node {} is outside [0, {})", c.numa_node, kMaxNumaNodes));
    }
    std::vector<int> nodes = numa_nodes_with_memory();
    if (std::find(nodes.begin(), nodes.end(), c.numa_node) == nodes.end()) {
      invalid(fmt::format("numa tier: NUMA node {} does not exist or has no memory on this machine (nodes with "
                          "memory: {})",
                          c.numa_node, fmt::join(nodes, ",")));
    }
  }
}

void validate(const TierConfig& c, TierKind expected) {
  if (c.kind != expected) {
    invalid(fmt::format("a {} tier configuration given to a {} tier", to_string(c.kind), to_string(expected)));
  }
  validate(c);
}

}  // namespace calico::memory::tiers
