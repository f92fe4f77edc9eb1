// SpinDelay: a busy wait of a given number of nanoseconds, with no syscall and no shared
// state, for charging emulated memory latency on the access path (emulated_far_tier.h).
//
// Entry points: SpinDelay::calibrate(), spin_ns(), ticks_per_ns().
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
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace calico::memory::tiers {

class SpinDelay {
 public:
  // Measures the tick rate against steady_clock over `window` (at least 1 ms; 20 ms gives
  // a rate within ~0.01%). Called once per tier at construction, never on the access path.
  static SpinDelay calibrate(std::chrono::nanoseconds window = std::chrono::milliseconds(20));

  // A delay with a known rate (tests, and tiers that share one calibration).
  // Pre: ticks_per_ns > 0.
  explicit SpinDelay(double ticks_per_ns);

  double ticks_per_ns() const { return ticks_per_ns_; }

  // Busy-waits `ticks` ticks of this delay's clock (see the header comment for ordering).
  // ticks == 0 returns at once without fencing.
  static void spin_ticks(uint64_t ticks) {
    if (ticks == 0) return;
#if defined(__x86_64__)
    unsigned aux;
    const uint64_t deadline = __rdtscp(&aux) + ticks;
    while (__rdtsc() < deadline) {
    }
    _mm_lfence();
#else
    const uint64_t deadline = now_ticks() + ticks;
    while (now_ticks() < deadline) {
    }
#endif
  }

  uint64_t ns_to_ticks(double ns) const { return static_cast<uint64_t>(ns * ticks_per_ns_ + 0.5); }

  void spin_ns(double ns) const { spin_ticks(ns_to_ticks(ns)); }

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
};

}  // namespace calico::memory::tiers
