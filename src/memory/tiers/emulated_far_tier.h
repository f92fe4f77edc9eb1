// EmulatedFarTier: a far tier (remote NUMA, CXL) emulated in local memory, for machines
// with one memory node. Frames are plain memory; every access is charged
// config.extra_latency_ns per touched cache line by a calibrated spin (spin_delay.h), and
// every copy into or out of the tier first takes its bytes from a token bucket of
// config.migration_bytes_per_s (token_bucket.h), shared by all threads: the link's
// bandwidth, not each thread's.
//
// What the model leaves out (docs/results/tiers.md): memory-level parallelism (a real far tier
// overlaps independent misses; the charge serializes them, so it models dependent accesses
// such as a B+tree descent or a pointer chase exactly and streaming accesses
// pessimistically), bandwidth contention of ordinary accesses, and the cache: a line that
// hits in the CPU cache is still charged (the pool charges what it reads from a far frame
// and cannot see the cache).
#pragma once

#include <optional>

#include "memory/tiers/memory_tier.h"
#include "memory/tiers/spin_delay.h"
#include "memory/tiers/token_bucket.h"

namespace calico::memory::tiers {

class EmulatedFarTier final : public MemoryTier {
 public:
  // Errors: those of validate(); config.kind must be kEmulated. `spin` gives the tick rate
  // (SpinDelay::calibrate() once per process is enough; several tiers may share it).
  EmulatedFarTier(const TierConfig& config, const SpinDelay& spin);

  void place(void*, size_t) const override {}
  void copy(void* dst, const void* src, size_t n) override;

  // The spin's tick rate, and the latency actually charged per line after rounding to
  // whole ticks.
  double ticks_per_ns() const { return ticks_per_ns_; }
  double charged_ns_per_line() const { return static_cast<double>(ticks_per_line()) / ticks_per_ns_; }

 private:
  const double ticks_per_ns_;
  std::optional<TokenBucket> bucket_;  // empty: migration_bytes_per_s == 0 (unthrottled)
};

}  // namespace calico::memory::tiers
