// MemoryTier: one tier of frame memory, as the pool sees it: where its frames are placed,
// what an access to them costs, and what a copy into or out of them (a migration) costs.
//
// Entry points: make_tier(); place(), charge_access(), copy(), stats().
// Implementations: LocalTier (local_tier.h), EmulatedFarTier (emulated_far_tier.h),
// NumaTier (numa_tier.h). docs/results/tiers.md describes the model and its calibration.
//
// How the pool uses a tier (docs/results/tiers.md):
//  1. Map the tier's frames (a FrameArena of config().frames frames), then place() them
//     once, before the pool publishes any of them.
//  2. After reading or writing [addr, addr + len) of one of its frames, call
//     charge_access(addr, len). For the emulated tier this spins the extra latency of every
//     line touched; for the others it is one predictable branch. It is inline and not
//     virtual: the access path pays no indirect call.
//  3. Move a page between tiers with the destination or source tier's copy() (the far
//     tier's, for either direction: its link is the bottleneck). copy() is thread-safe and
//     may wait for bandwidth; call it with no latch held that others spin on, or accept that
//     they wait too.
//
// Thread safety: every member is safe to call from any thread at once; a tier is created
// once and lives as long as the frames placed in it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "memory/tiers/cache_lines.h"
#include "memory/tiers/spin_delay.h"
#include "memory/tiers/tier_config.h"

namespace calico::memory::tiers {

// Totals since the tier was created, read with relaxed loads (a snapshot of counters that
// may move while it is taken).
struct TierStats {
  uint64_t copies = 0;
  uint64_t copied_bytes = 0;
  uint64_t throttle_wait_ns = 0;  // time copy() waited for bandwidth tokens
};

class MemoryTier {
 public:
  virtual ~MemoryTier() = default;
  MemoryTier(const MemoryTier&) = delete;
  MemoryTier& operator=(const MemoryTier&) = delete;

  const TierConfig& config() const { return config_; }
  TierKind kind() const { return config_.kind; }

  // Puts [base, base + bytes) in this tier's memory: nothing for local and emulated tiers,
  // mbind for a NUMA tier (pages already present move). Pre: base 4 KB aligned.
  // Errors: as bind_to_node() (numa_binding.h).
  virtual void place(void* base, size_t bytes) const = 0;

  // Charges an access of [addr, addr + len): ticks_per_line() ticks per touched cache line,
  // in one spin serialized after the access, its fixed overhead included (spin_delay.h).
  // No syscall, no shared write.
  void charge_access(const void* addr, size_t len) const {
    if (ticks_per_line_ == 0) return;
    SpinDelay::spin_ticks(lines_touched_at(addr, len) * ticks_per_line_, spin_overhead_ticks_);
  }
  // The same for `lines` lines whose addresses the caller has already counted.
  void charge_lines(uint64_t lines) const {
    if (ticks_per_line_ == 0) return;
    SpinDelay::spin_ticks(lines * ticks_per_line_, spin_overhead_ticks_);
  }
  uint64_t ticks_per_line() const { return ticks_per_line_; }

  // Copies n bytes from src to dst (a migration into or out of this tier), first taking n
  // bytes of the tier's migration bandwidth, waiting if needed. Pre: the ranges do not
  // overlap.
  virtual void copy(void* dst, const void* src, size_t n) = 0;

  TierStats stats() const {
    return {copies_.load(std::memory_order_relaxed), copied_bytes_.load(std::memory_order_relaxed),
            throttle_wait_ns_.load(std::memory_order_relaxed)};
  }

 protected:
  // Pre: validate(config) passed.
  MemoryTier(const TierConfig& config, uint64_t ticks_per_line, uint64_t spin_overhead_ticks)
      : config_(config), ticks_per_line_(ticks_per_line), spin_overhead_ticks_(spin_overhead_ticks) {}

  void count_copy(size_t n, uint64_t waited_ns) {
    copies_.fetch_add(1, std::memory_order_relaxed);
    copied_bytes_.fetch_add(n, std::memory_order_relaxed);
    if (waited_ns != 0) throttle_wait_ns_.fetch_add(waited_ns, std::memory_order_relaxed);
  }

 private:
  const TierConfig config_;
  const uint64_t ticks_per_line_;  // 0: accesses are not charged
  const uint64_t spin_overhead_ticks_;  // SpinDelay::overhead_ticks(), subtracted per charge
  std::atomic<uint64_t> copies_{0};
  std::atomic<uint64_t> copied_bytes_{0};
  std::atomic<uint64_t> throttle_wait_ns_{0};
};

// Validates `config` (tier_config.h) and builds its tier. An emulated tier calibrates its
// spin against steady_clock here (~20 ms), once.
// Errors: those of validate(); kIoError when the time-stamp counter does not advance.
std::unique_ptr<MemoryTier> make_tier(const TierConfig& config);

}  // namespace calico::memory::tiers
