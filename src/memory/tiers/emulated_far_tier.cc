// EmulatedFarTier: see emulated_far_tier.h.
#include "memory/tiers/emulated_far_tier.h"

#include <cstring>

namespace calico::memory::tiers {
namespace {

// Validates before converting: a NaN latency must become an Error, not a NaN cast.
uint64_t validated_ticks_per_line(const TierConfig& c, const SpinDelay& spin) {
  validate(c, TierKind::kEmulated);
  return spin.ns_to_ticks(c.extra_latency_ns);
}

}  // namespace

EmulatedFarTier::EmulatedFarTier(const TierConfig& config, const SpinDelay& spin)
    : MemoryTier(config, validated_ticks_per_line(config, spin), spin.overhead_ticks()), ticks_per_ns_(spin.ticks_per_ns()) {
  if (config.migration_bytes_per_s != 0) bucket_.emplace(config.migration_bytes_per_s, config.burst_bytes);
}

void EmulatedFarTier::copy(void* dst, const void* src, size_t n) {
  const int64_t waited_ns = bucket_ ? bucket_->acquire(n) : 0;
  std::memcpy(dst, src, n);
  count_copy(n, static_cast<uint64_t>(waited_ns));
}

}  // namespace calico::memory::tiers
