// TokenBucket: a thread-safe, lock-free rate limit in bytes per second, for the migration
// bandwidth of an emulated far tier (emulated_far_tier.h). A copy of N bytes first takes N
// tokens, waiting until the bucket has them.
//
// Entry points: try_acquire(), reserve(), acquire(); BasicTokenBucket<Clock> takes the clock
// as a parameter so that tests drive it with a fake one (SteadyNanoClock in production).
//
// Model (the "virtual scheduling" form of a token bucket, as in GCRA): one atomic word T, a
// time in ticks of 1/kTicksPerNs ns since the bucket's creation, such that the bucket holds min(B, r * (now - T)) tokens, r = rate,
// B = burst (capacity). Taking n tokens at time t moves T to T' = max(T, t - B/r) + n/r.
// The tokens are the caller's once now >= T'. try_acquire() takes them only when T' <= t;
// reserve() always moves T (the caller queues behind earlier reservations, FIFO in CAS
// order) and returns T' for the caller to wait for.
//
// Invariant (tests check it with a fake clock): over any window [s, e], the bytes of the
// grants reserved at or after s whose ready time is at most e total at most
// B + r * (e - s), plus one tick's worth (r / 64 ns: under a byte below 64 GB/s).
// Proof: the first grant of the window leaves T >= s - B/r + n_1/r, each later one adds its
// n/r, and the last one's T is at most e.
//
// Rounding: costs and B/r are rounded up to whole ticks (1/64 ns); a grant's cost errs on
// the slow side by under 16 ps, the burst on the generous side by under one tick (the
// slack above). Rounding both the same way keeps a burst-sized request grantable. Range:
// T is an int64 of ticks relative to the bucket's creation, enough for 4.5 years.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>

#include "calico/checks.h"

namespace calico::memory::tiers {

// Sub-nanosecond resolution of T, so that a 64-byte grant at 20 GB/s (3.2 ns) is not
// rounded to 4 ns.
inline constexpr int64_t kTicksPerNs = 64;

// The production clock: steady_clock in nanoseconds, waiting by sleeping then spinning.
struct SteadyNanoClock {
  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // Returns once now_ns() >= deadline_ns. Sleeps through all but the last 200 us (the
  // scheduler's wake-up slack on a loaded machine) and busy-waits the rest: a yield could
  // give the core away for a whole time slice, and a copy throttled to a few us per page
  // would then run at a fraction of its rate.
  void wait_until(int64_t deadline_ns) const {
    constexpr int64_t kSpinNs = 200'000;
    for (int64_t now = now_ns(); now < deadline_ns; now = now_ns()) {
      if (deadline_ns - now > kSpinNs) std::this_thread::sleep_for(std::chrono::nanoseconds(deadline_ns - now - kSpinNs));
    }
  }
};

// Clock: int64_t now_ns() const (monotonic), void wait_until(int64_t ns) const.
template <class Clock>
class BasicTokenBucket {
 public:
  // rate_bytes_per_s > 0 and finite, burst_bytes >= 1 (callers validate: tier_config.h).
  // The bucket starts full.
  BasicTokenBucket(double rate_bytes_per_s, uint64_t burst_bytes, Clock clock = Clock())
      : clock_(clock),
        epoch_ns_(clock_.now_ns()),
        ticks_per_byte_(1e9 * kTicksPerNs / rate_bytes_per_s),
        burst_bytes_(burst_bytes),
        burst_ticks_(cost_ticks(burst_bytes)),
        t_(now_ticks() - burst_ticks_) {
    CALICO_CHECK(rate_bytes_per_s > 0 && std::isfinite(rate_bytes_per_s) && burst_bytes >= 1);
  }
  BasicTokenBucket(const BasicTokenBucket&) = delete;
  BasicTokenBucket& operator=(const BasicTokenBucket&) = delete;

  uint64_t burst_bytes() const { return burst_bytes_; }
  double rate_bytes_per_s() const { return 1e9 * kTicksPerNs / ticks_per_byte_; }
  const Clock& clock() const { return clock_; }

  // Takes n tokens if the bucket holds them now; never waits. Pre: 1 <= n <= burst_bytes().
  bool try_acquire(uint64_t n) {
    CALICO_DCHECK(n >= 1 && n <= burst_bytes_);
    const int64_t t = now_ticks();
    int64_t old = t_.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t next = std::max(old, t - burst_ticks_) + cost_ticks(n);
      if (next > t) return false;
      if (t_.compare_exchange_weak(old, next, std::memory_order_relaxed)) return true;
    }
  }

  // Reserves n tokens behind every earlier reservation and returns the time, in clock
  // nanoseconds (rounded up), at which they are the caller's. Never waits.
  // Pre: 1 <= n <= burst_bytes().
  int64_t reserve(uint64_t n) {
    CALICO_DCHECK(n >= 1 && n <= burst_bytes_);
    const int64_t t = now_ticks();
    int64_t old = t_.load(std::memory_order_relaxed);
    int64_t next;
    do {
      next = std::max(old, t - burst_ticks_) + cost_ticks(n);
    } while (!t_.compare_exchange_weak(old, next, std::memory_order_relaxed));
    // Rounded up to whole nanoseconds: waiting until then never starts a copy early.
    return epoch_ns_ + (next + kTicksPerNs - 1) / kTicksPerNs;
  }

  // Takes n tokens (any n >= 0), waiting as long as needed; a request larger than the
  // burst is taken in burst-sized parts. Returns the nanoseconds waited (by the clock).
  int64_t acquire(uint64_t n) {
    int64_t waited_ns = 0;
    while (n > 0) {
      const uint64_t part = std::min(n, burst_bytes_);
      const int64_t ready = reserve(part);
      const int64_t before = clock_.now_ns();
      if (ready > before) {
        clock_.wait_until(ready);
        waited_ns += clock_.now_ns() - before;
      }
      n -= part;
    }
    return waited_ns;
  }

 private:
  int64_t now_ticks() const { return (clock_.now_ns() - epoch_ns_) * kTicksPerNs; }
  int64_t cost_ticks(uint64_t n) const {
    return static_cast<int64_t>(std::ceil(static_cast<double>(n) * ticks_per_byte_));
  }

  const Clock clock_;
  const int64_t epoch_ns_;        // clock time of T == 0
  const double ticks_per_byte_;   // kTicksPerNs * 1e9 / rate
  const uint64_t burst_bytes_;
  const int64_t burst_ticks_;     // B / r in ticks
  std::atomic<int64_t> t_;        // T of the header comment, in ticks since epoch_ns_
};

using TokenBucket = BasicTokenBucket<SteadyNanoClock>;

}  // namespace calico::memory::tiers
