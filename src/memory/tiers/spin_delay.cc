// SpinDelay: see spin_delay.h.
#include "memory/tiers/spin_delay.h"

#include <sys/mman.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>
#include <cstdint>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::memory::tiers {
namespace {

// The in-context cost of a spin beyond its wait, in ticks: a dependent chase through a
// random cycle of 64-byte nodes over `bytes` (beyond L2), in pairs of windows with and
// without a spin of probe ticks after each hop; the median over pairs of the per-hop
// difference, minus the probe. Medians: a preempted window is an outlier either way.
// The probe sweeps 64 ticks above kProbe across the pairs: the spin loop reads the clock
// about every 26 ticks on the development machine (rdtsc's own latency), so a spin
// overshoots its deadline by 0..26 ticks depending on where the deadline falls in that
// period, and a fixed probe measured 58..84 ticks of overhead depending on its length
// alone (docs/results/tiers.md, "Calibration"). The sweep averages over the phase, as the
// pool's charges of varying line counts and varying work between them do.
uint64_t measure_overhead_ticks(size_t bytes) {
  constexpr uint64_t kProbe = 256;  // above any overhead seen (~100 ticks): the loop spins
  constexpr int kPairs = 64;  // even: as many pairs of each order
  constexpr int kHops = 2048;
  const size_t nodes = std::max<size_t>(bytes / 64, 1024);
  // Like the frames it stands for: 2 MB pages where the kernel gives them (FrameArena),
  // so that page walks do not hide part of the cost.
  void* mem = mmap(nullptr, nodes * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 0;  // no context: no compensation (the charge errs long)
  madvise(mem, nodes * 64, MADV_HUGEPAGE);
  auto* next = static_cast<uint64_t*>(mem);  // node i is next[8 i], one 64-byte line
  {
    std::vector<uint32_t> order(nodes);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(nodes));
    for (size_t i = 0; i < nodes; ++i) next[size_t{order[i]} * 8] = order[(i + 1) % nodes];
  }
  uint64_t p = 0;
  auto window = [&](uint64_t probe) {
    const uint64_t t0 = SpinDelay::now_ticks();
    for (int h = 0; h < kHops; ++h) {
      p = next[p * 8];
      SpinDelay::spin_ticks(probe, 0);
    }
    return static_cast<double>(SpinDelay::now_ticks() - t0) / kHops;
  };
  window(0);  // warm-up: TLB and caches in their steady state
  std::vector<double> diffs;
  for (int i = 0; i < kPairs; ++i) {
    // ABBA order: whichever window comes first in a pair measures slower (by 10-20 ns per
    // hop on the development machine, with identical windows); alternating cancels it.
    const uint64_t probe = kProbe + static_cast<uint64_t>(i);  // 0..63 above kProbe
    double plain, spun;
    if (i % 2 == 0) {
      plain = window(0);
      spun = window(probe);
    } else {
      spun = window(probe);
      plain = window(0);
    }
    diffs.push_back(spun - plain - static_cast<double>(probe));
  }
  munmap(mem, nodes * 64);
  std::sort(diffs.begin(), diffs.end());
  const double over = diffs[diffs.size() / 2];
  return over > 0 ? static_cast<uint64_t>(over + 0.5) : 0;
}

}  // namespace

SpinDelay::SpinDelay(double ticks_per_ns, uint64_t overhead_ticks)
    : ticks_per_ns_(ticks_per_ns), overhead_ticks_(overhead_ticks) {
  CALICO_CHECK(ticks_per_ns > 0);
}

SpinDelay SpinDelay::calibrate(std::chrono::nanoseconds window, size_t context_bytes) {
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
  return SpinDelay(ticks / ns, measure_overhead_ticks(context_bytes));
}

}  // namespace calico::memory::tiers
