// SpinDelay: see spin_delay.h.
#include "memory/tiers/spin_delay.h"

#include <algorithm>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::memory::tiers {

SpinDelay::SpinDelay(double ticks_per_ns) : ticks_per_ns_(ticks_per_ns) { CALICO_CHECK(ticks_per_ns > 0); }

SpinDelay SpinDelay::calibrate(std::chrono::nanoseconds window) {
  using Clock = std::chrono::steady_clock;
  window = std::max<std::chrono::nanoseconds>(window, std::chrono::milliseconds(1));
  // Pair each clock reading with a tick reading taken right after it; spin (not sleep) so
  // that a descheduled thread cannot stretch one side of the pair.
  const Clock::time_point t0 = Clock::now();
  const uint64_t k0 = now_ticks();
  Clock::time_point t1;
  uint64_t k1;
  do {
    t1 = Clock::now();
    k1 = now_ticks();
  } while (t1 - t0 < window);
  const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  const double ticks = static_cast<double>(k1 - k0);
  // A counter that does not advance is the machine's fault (a hypervisor freezing the TSC),
  // not ours: an Error, not a check.
  if (!(k1 > k0)) throw Error(ErrorCode::kIoError, "the CPU time-stamp counter did not advance during calibration");
  return SpinDelay(ticks / ns);
}

}  // namespace calico::memory::tiers
