// calico_bench tier-calibrate: proves the emulated far tier (src/memory/tiers/,
// docs/results/tiers.md) against its configuration on this machine.
//
//  1. Latency: a pointer chase over a random cyclic permutation of 64-byte nodes in a
//     frame arena larger than the LLC (every hop a dependent miss), once through the local
//     tier and once through the emulated far tier (each hop charged for the line it
//     read). The far run's extra ns per hop must be the configured latency within
//     max(kLatencyToleranceNs, kLatencyToleranceFraction x configured).
//  2. Bandwidth: page-sized copies into the far tier (its copy(), throttled by the token
//     bucket, with a burst of one page) against plain memcpy; the throttled rate must be the configured one within
//     kBandwidthToleranceFraction, unless memcpy itself is slower (then not verifiable,
//     and said so).
// Runs of cfg.seconds each, local and far interleaved, cfg.repeat rounds, medians.
// Returns 0 when both checks pass (or the bandwidth one is not verifiable), 1 otherwise;
// bad options throw.
#pragma once

#include <cstdint>
#include <string>

namespace calico::bench {

// The null run (--latency-ns 0: the far tier charges nothing) measures within +-3..14 ns
// of zero on the shared, nice'd development machine: the tolerance is above that floor.
inline constexpr double kLatencyToleranceNs = 10.0;
inline constexpr double kLatencyToleranceFraction = 0.15;
inline constexpr double kBandwidthToleranceFraction = 0.05;

struct TierCalibrateConfig {
  std::string preset = "remote-numa";  // remote-numa or cxl: the defaults of the next two
  double latency_ns = -1;              // extra ns per cache line; < 0: the preset's
  double bandwidth_mb_s = -1;          // migration MB/s (10^6 B/s); < 0: the preset's, 0: unthrottled
  uint64_t mb = 256;                   // the chase buffer and each copy buffer (> the LLC)
  double seconds = 1.0;                // per run
  int repeat = 5;                      // rounds (local and far interleaved in each)
  uint64_t seed = 42;
  std::string json_path;               // append one JSON line when set
};

int run_tier_calibrate(const TierCalibrateConfig& cfg);

}  // namespace calico::bench
