// calico_bench tier-calibrate: see tier_calibrate.h.
#include "tiers/tier_calibrate.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/machine.h"
#include "memory/frame_arena.h"
#include "memory/tiers/cache_lines.h"
#include "memory/tiers/emulated_far_tier.h"
#include "memory/tiers/local_tier.h"
#include "memory/tiers/spin_delay.h"
#include "memory/tiers/tier_config.h"
#include "common/sizes.h"

namespace calico::bench {
namespace {

using memory::FrameArena;
using memory::tiers::EmulatedFarTier;
using memory::tiers::kCacheLineBytes;
using memory::tiers::LocalTier;
using memory::tiers::MemoryTier;
using memory::tiers::SpinDelay;
using memory::tiers::TierConfig;
using Clock = std::chrono::steady_clock;

constexpr size_t kPageBytes = 4096;
constexpr uint64_t kCopyBufferBytes = uint64_t{64} << 20;  // each of source and target: 2x a 32 MB LLC
constexpr uint64_t kHopsPerCheck = 4096;                   // hops between clock reads

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Links the arena's 64-byte nodes into one random cycle (every node once, so the chase
// visits all of them before it repeats) and returns the first node.
void* build_cycle(FrameArena& arena, uint64_t seed) {
  std::byte* base = arena.frame(1);
  const size_t nodes = size_t{arena.num_frames()} * arena.page_size() / kCacheLineBytes;
  std::vector<uint32_t> order(nodes);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < nodes; ++i) {
    void** node = reinterpret_cast<void**>(base + size_t{order[i]} * kCacheLineBytes);
    *node = base + size_t{order[(i + 1) % nodes]} * kCacheLineBytes;
  }
  return base + size_t{order[0]} * kCacheLineBytes;
}

int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// One window: kHopsPerCheck hops along the cycle from *p, each hop's line charged to
// `tier`; thread CPU ns per hop.
double window(const MemoryTier& tier, void*& p) {
  void* q = p;
  const int64_t c0 = thread_cpu_ns();
  for (uint64_t i = 0; i < kHopsPerCheck; ++i) {
    q = *static_cast<void**>(q);
    tier.charge_access(q, sizeof(void*));
  }
  const int64_t c1 = thread_cpu_ns();
  p = q;
  return static_cast<double>(c1 - c0) / kHopsPerCheck;
}

struct ChaseRound {
  double local_ns;  // medians over the round's windows, ns per hop
  double far_ns;
  double extra_ns;  // median over window pairs of far - local
};

// Alternates local and far windows for `seconds` of wall time. Windows are timed in thread
// CPU time (the wall clock also counts the time other processes held the core), paired
// (adjacent windows see the same machine: load, frequency), and summarized by medians (a
// window that was preempted, with cold caches and TLB afterwards, is an outlier).
ChaseRound chase_round(const MemoryTier& local, const MemoryTier& far, void*& p, double seconds) {
  std::vector<double> l, f, d;
  const auto t0 = Clock::now();
  l.reserve(4096), f.reserve(4096), d.reserve(4096);
  bool local_first = true;
  do {
    // ABBA order: the first window of a pair measured ~10 ns/hop slower than the second
    // with identical tiers (the loop's own work between pairs); alternating cancels it.
    double a, b;
    if (local_first) {
      a = window(local, p);
      b = window(far, p);
    } else {
      b = window(far, p);
      a = window(local, p);
    }
    local_first = !local_first;
    l.push_back(a);
    f.push_back(b);
    d.push_back(b - a);
  } while (seconds_since(t0) < seconds);
  return {median(std::move(l)), median(std::move(f)), median(std::move(d))};
}

// Copies page after page from `src` to `dst` through tier.copy() for `seconds`, in windows
// of kCopiesPerWindow pages; returns the median rate, in MB/s, of the windows that were not
// preempted (thread CPU time >= 90% of wall time: copy() busy-waits for short waits, so a
// running copier is always on the CPU). Wall time is what the throttle paces; a preempted
// window only shows the machine's load, and the window after it starts with a full
// bucket (a burst): both are outliers the median drops.
double copy_rate(MemoryTier& tier, const FrameArena& src, FrameArena& dst, double seconds) {
  constexpr int kCopiesPerWindow = 256;  // 1 MB: ~1 ms at 1 GB/s
  const uint32_t pages = src.num_frames();
  std::vector<double> rates;
  uint32_t f = 1;
  const auto t0 = Clock::now();
  do {
    const int64_t c0 = thread_cpu_ns();
    const auto w0 = Clock::now();
    for (int i = 0; i < kCopiesPerWindow; ++i) {
      tier.copy(dst.frame(f), src.frame(f), kPageBytes);
      f = f == pages ? 1 : f + 1;
    }
    const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - w0).count();
    const double cpu_ns = static_cast<double>(thread_cpu_ns() - c0);
    if (cpu_ns >= 0.9 * wall_ns) rates.push_back(kCopiesPerWindow * kPageBytes / wall_ns * 1e3);
  } while (seconds_since(t0) < seconds);
  return rates.empty() ? 0 : median(std::move(rates));
}

uint64_t llc_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  uint64_t kb = 0;
  if (in >> kb) return kb * 1024;  // "32768K"
  return 0;
}

// Step 1: checks the options and makes the far tier's configuration: the preset, then
// --latency-ns and --bandwidth-mb-s over it, sized to the chase buffer.
TierConfig far_tier_config(const TierCalibrateConfig& cfg) {
  check_size_mb(cfg.mb, "--mb");
  // The cycle's order is a vector of uint32 node numbers: 16 GB is 2^28 nodes.
  if (cfg.mb < 4 || cfg.mb > 16384) throw std::invalid_argument("--mb " + std::to_string(cfg.mb) + " is not in [4, 16384]");
  if (!(cfg.seconds > 0) || cfg.repeat < 1) throw std::invalid_argument("--seconds and --repeat must be positive");
  TierConfig far_cfg;
  if (cfg.preset == "remote-numa") {
    far_cfg = TierConfig::remote_numa(1, kPageBytes);
  } else if (cfg.preset == "cxl") {
    far_cfg = TierConfig::cxl(1, kPageBytes);
  } else {
    throw std::invalid_argument("--preset " + cfg.preset + " is not remote-numa or cxl");
  }
  if (cfg.latency_ns >= 0) far_cfg.extra_latency_ns = cfg.latency_ns;
  if (cfg.bandwidth_mb_s >= 0) far_cfg.migration_bytes_per_s = cfg.bandwidth_mb_s * 1e6;
  const uint32_t chase_pages = static_cast<uint32_t>((cfg.mb << 20) / kPageBytes) - 1;
  far_cfg.frames = chase_pages;
  // One page of burst: the measured rate is then the bucket's rate, not rate plus a burst
  // after every preemption (the default 256 KiB burst refills whenever the copier is off
  // the CPU for 12 us or more, which on a loaded machine is every time slice).
  far_cfg.burst_bytes = kPageBytes;
  // Errors name the option's value (a latency of 1e9, a bandwidth of 0.5 MB/s...).
  memory::tiers::validate(far_cfg);
  return far_cfg;
}

}  // namespace

int run_tier_calibrate(const TierCalibrateConfig& cfg) {
  const TierConfig far_cfg = far_tier_config(cfg);
  const uint32_t chase_pages = far_cfg.frames;
  const uint32_t copy_pages = static_cast<uint32_t>(kCopyBufferBytes / kPageBytes) - 1;

  const SpinDelay spin = SpinDelay::calibrate();
  LocalTier local(TierConfig::local(chase_pages, kPageBytes));
  EmulatedFarTier far(far_cfg, spin);
  TierConfig unthrottled_cfg = far_cfg;
  unthrottled_cfg.migration_bytes_per_s = 0;
  EmulatedFarTier unthrottled(unthrottled_cfg, spin);

  const uint64_t llc = llc_bytes();
  const int nice = getpriority(PRIO_PROCESS, 0);
  fmt::print("tier-calibrate: far tier {}; chase over {} MB (LLC {} MB), copies of {} B between two {} MB arenas; "
             "{} rounds of {} s; nice {}\n",
             far_cfg.describe(), cfg.mb, llc >> 20, kPageBytes, kCopyBufferBytes >> 20, cfg.repeat, cfg.seconds, nice);
  fmt::print("machine: {}\n", machine_json());
  fmt::print("spin: {:.4f} TSC ticks per ns, {} ticks per line = {:.2f} ns charged per line, {} ticks ({:.1f} ns) of "
             "fixed overhead per charge (subtracted)\n",
             spin.ticks_per_ns(), far.ticks_per_line(), far.charged_ns_per_line(), spin.overhead_ticks(),
             static_cast<double>(spin.overhead_ticks()) / spin.ticks_per_ns());
  if (llc != 0 && (cfg.mb << 20) < 2 * llc) {
    fmt::print("warning: the chase buffer is under 2x the LLC: local hops may hit in cache\n");
  }

  // Frames are 2 MB pages where the kernel gives them (fewer TLB misses: the chase then
  // measures memory, not page walks), prefaulted so that no run takes page faults.
  FrameArena chase_arena(kPageBytes, chase_pages, /*huge_pages=*/true, /*prefault=*/true);
  FrameArena src(kPageBytes, copy_pages, true, true);
  FrameArena dst(kPageBytes, copy_pages, true, true);
  std::memset(src.frame(1), 0x3c, size_t{copy_pages} * kPageBytes);
  void* p = build_cycle(chase_arena, cfg.seed);
  chase_round(local, local, p, std::min(cfg.seconds, 0.2));  // warm-up: TLB, page tables, frequency

  std::vector<double> local_ns, far_ns, diff_ns, memcpy_mb_s, throttled_mb_s;
  for (int r = 0; r < cfg.repeat; ++r) {
    const ChaseRound c = chase_round(local, far, p, cfg.seconds);
    const double mc = copy_rate(unthrottled, src, dst, cfg.seconds);
    const double th = far_cfg.migration_bytes_per_s == 0 ? mc : copy_rate(far, src, dst, cfg.seconds);
    local_ns.push_back(c.local_ns);
    far_ns.push_back(c.far_ns);
    diff_ns.push_back(c.extra_ns);
    memcpy_mb_s.push_back(mc);
    throttled_mb_s.push_back(th);
    fmt::print("round {}: local {:.1f} ns/hop, far {:.1f} ns/hop, extra {:.1f} ns; memcpy {:.0f} MB/s, far-tier "
               "copy {:.0f} MB/s\n",
               r + 1, c.local_ns, c.far_ns, c.extra_ns, mc, th);
  }

  const double want_ns = far_cfg.extra_latency_ns;
  const double got_ns = median(diff_ns);
  const double tol_ns = std::max(kLatencyToleranceNs, kLatencyToleranceFraction * want_ns);
  const bool latency_ok = std::abs(got_ns - want_ns) <= tol_ns;
  const double want_mb_s = far_cfg.migration_bytes_per_s / 1e6;
  const double mc_mb_s = median(memcpy_mb_s);
  const double got_mb_s = median(throttled_mb_s);
  // The throttle can only be seen when memcpy alone is faster than it (with margin).
  const bool bw_verifiable = want_mb_s > 0 && mc_mb_s > want_mb_s * (1 + 2 * kBandwidthToleranceFraction);
  const bool bw_ok = !bw_verifiable || std::abs(got_mb_s - want_mb_s) <= kBandwidthToleranceFraction * want_mb_s;

  fmt::print("latency: local {:.1f} ns/hop, far {:.1f} ns/hop (medians); extra {:.1f} ns/hop (median of rounds), "
             "configured {:.1f} ns: error {:+.1f} ns, tolerance +-{:.1f} ns: {}\n",
             median(local_ns), median(far_ns), got_ns, want_ns, got_ns - want_ns, tol_ns, latency_ok ? "PASS" : "FAIL");
  if (want_mb_s == 0) {
    fmt::print("bandwidth: unthrottled (memcpy {:.0f} MB/s)\n", mc_mb_s);
  } else if (!bw_verifiable) {
    fmt::print("bandwidth: configured {:.0f} MB/s, but memcpy on this machine reaches only {:.0f} MB/s: the throttle "
               "never binds (NOT VERIFIABLE here; try --bandwidth-mb-s below {:.0f})\n",
               want_mb_s, mc_mb_s, mc_mb_s / (1 + 2 * kBandwidthToleranceFraction));
  } else {
    fmt::print("bandwidth: far-tier copies {:.0f} MB/s (median), configured {:.0f} MB/s: error {:+.1f}%, tolerance "
               "+-{:.0f}%: {} (memcpy {:.0f} MB/s)\n",
               got_mb_s, want_mb_s, 100 * (got_mb_s - want_mb_s) / want_mb_s, 100 * kBandwidthToleranceFraction,
               bw_ok ? "PASS" : "FAIL", mc_mb_s);
  }

  if (!cfg.json_path.empty()) {
    std::ofstream out(cfg.json_path, std::ios::app);
    if (!out) throw std::runtime_error("cannot append to " + cfg.json_path);
    out << fmt::format(
        R"({{"bench":"tier-calibrate",{},"nice":{},"preset":"{}","latency_ns":{},"bandwidth_mb_s":{},"mb":{},)"
        R"("seconds":{},"repeat":{},"seed":{},"ticks_per_ns":{:.5f},"spin_overhead_ticks":{},"charged_ns_per_line":{:.3f},)"
        R"("local_ns_per_hop":{:.2f},"far_ns_per_hop":{:.2f},"extra_ns_per_hop":{:.2f},"latency_tolerance_ns":{:.2f},)"
        R"("latency_ok":{},"memcpy_mb_s":{:.0f},"throttled_mb_s":{:.0f},"bandwidth_verifiable":{},"bandwidth_ok":{},)"
        R"("rounds_extra_ns":[{:.2f}],"rounds_throttled_mb_s":[{:.0f}]}})",
        machine_json(), nice, cfg.preset, want_ns, want_mb_s, cfg.mb, cfg.seconds, cfg.repeat, cfg.seed,
        spin.ticks_per_ns(), spin.overhead_ticks(), far.charged_ns_per_line(), median(local_ns), median(far_ns), got_ns, tol_ns, latency_ok,
        mc_mb_s, got_mb_s, bw_verifiable, bw_ok, fmt::join(diff_ns, ","), fmt::join(throttled_mb_s, ","))
        << "\n";
  }
  return latency_ok && bw_ok ? 0 : 1;
}

}  // namespace calico::bench
