// SpinDelay: a busy wait of a given number of nanoseconds, with no syscall and no shared
// state, for charging emulated memory latency on the access path (emulated_far_tier.h).
//
// Entry points: SpinDelay::calibrate(), spin_ticks(), ns_to_ticks(), overhead_ticks().
//
// The clock is the CPU's time-stamp counter on x86-64 (constant and non-stop on every CPU
// since Nehalem / Zen; calibrate() measures its rate against steady_clock once) and
// steady_clock elsewhere. A SpinDelay is an immutable value: copy it freely between threads.
//
// Serialization (x86-64): spin_ns() starts with RDTSCP, which waits until every earlier
// instruction has executed and every earlier load is globally visible, and ends with
// LFENCE, so no later instruction starts before the wait is over. The delay therefore adds
// to the latency of the access before it (a load miss cannot hide under the spin) and of
// the access after it (a next dependent miss cannot start early), which is what an extra
// per-access latency means.
//
// Overhead: the fences, the clock reads, the loop exit and the wait for the preceding miss
// to retire cost a fixed ~30-35 ns per spin on the machine we measured (docs/results/tiers.md),
// plus an overshoot of up to one clock read (~10 ns there) that depends on where the
// deadline falls between reads. calibrate() measures the mean over that phase
// (overhead_ticks(), see spin_delay.cc) and spin_ticks() subtracts it from the spin, so
// that a spin of k ticks costs k ticks in all, not k plus the overhead, to within half a
// clock read. A spin shorter than the overhead costs the overhead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace calico::memory::tiers {

class SpinDelay {
 public:
  // Measures the tick rate against steady_clock over `window` (at least 1 ms; 20 ms gives
  // a rate within ~0.01%), then the overhead of a spin in the context it is used in: after
  // a dependent load that misses, in a chase over `context_bytes` of memory (allocated and
  // freed here; 16 MB takes ~30 ms). Called once per tier at construction, never on the
  // access path.
  // Errors: kIoError when the counter does not advance.
  static SpinDelay calibrate(std::chrono::nanoseconds window = std::chrono::milliseconds(20),
                             size_t context_bytes = size_t{64} << 20);

  // A delay with a known rate and overhead (tests, and tiers that share one calibration).
  // Pre: ticks_per_ns > 0.
  explicit SpinDelay(double ticks_per_ns, uint64_t overhead_ticks = 0);

  double ticks_per_ns() const { return ticks_per_ns_; }
  uint64_t overhead_ticks() const { return overhead_ticks_; }

  // Busy-waits so that the call lasts about `ticks` ticks of this delay's clock, of which
  // `overhead` are the call's own fixed cost (see the header comment for ordering and
  // overhead). ticks == 0 returns at once without fencing.
  static void spin_ticks(uint64_t ticks, uint64_t overhead) {
    if (ticks == 0) return;
    const uint64_t wait = ticks > overhead ? ticks - overhead : 0;
#if defined(__x86_64__)
    unsigned aux;
    const uint64_t deadline = __rdtscp(&aux) + wait;
    while (__rdtsc() < deadline) {
    }
    _mm_lfence();
#else
    const uint64_t deadline = now_ticks() + wait;
    while (now_ticks() < deadline) {
    }
#endif
  }
  void spin(uint64_t ticks) const { spin_ticks(ticks, overhead_ticks_); }

  // Pre: ns finite and >= 0 (tier_config.h validates).
  uint64_t ns_to_ticks(double ns) const { return static_cast<uint64_t>(ns * ticks_per_ns_ + 0.5); }

  // The clock spin_ticks() counts.
  static uint64_t now_ticks() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

 private:
  double ticks_per_ns_;
  uint64_t overhead_ticks_;
};

}  // namespace calico::memory::tiers
