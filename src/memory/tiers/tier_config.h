// TierConfig: what a memory tier is (plain local memory, an emulated far tier, or a NUMA
// node), how many frames it holds, and the emulation's parameters; validate() turns every
// bad value into a calico::Error that names it.
//
// Entry points: TierConfig::local(), remote_numa(), cxl(), numa(); validate().
//
// Defaults of the emulation, from published measurements (docs/results/tiers.md gives the
// arithmetic; the vmcache^n paper itself reports no latency or bandwidth figure):
//  - Remote NUMA, +70 ns per cache line: Pond (Li et al., "Pond: CXL-Based Memory Pooling
//    Systems for Cloud Platforms", ASPLOS 2023) measures that CXL-attached memory adds
//    70-90 ns over local DRAM and that this is the latency of one NUMA hop on a
//    two-socket server; we take the low end for the hop.
//  - Remote NUMA migration, 20.8 GB/s: one UPI link of the vmcache^n paper's Xeon Silver
//    4314 (Intel's specification: 2 links at 10.4 GT/s, 2 bytes per transfer and
//    direction). A link's peak, not a measured copy rate: an upper bound.
//  - CXL, +170 ns per cache line and 17.8 GB/s: a CXL 2.0 E3.S memory expander (PCIe 5.0
//    x8) measured at 250 ns load latency and 17.8 GB/s all-read bandwidth on a Xeon
//    Platinum 8470 (Intel, CacheLib wiki "OCP demo configuration", 2023), minus ~80 ns of
//    local DRAM latency (Pond's hop of ~150 ns minus its 70 ns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace calico::memory::tiers {

enum class TierKind {
  kLocal,     // the fast tier: plain memory, no charge, no throttle
  kEmulated,  // a far tier emulated in local memory: charged latency, throttled copies
  kNuma,      // a far tier bound to a NUMA node with mbind: real latency, no charge
};

const char* to_string(TierKind kind);

// Bounds of validate(), each with its reason.
// One tier's frames: a quarter of x86-64's 128 TiB user address space, leaving room for
// the other tier and for vmcache's whole-data-set reservations.
inline constexpr uint64_t kMaxTierBytes = uint64_t{32} << 40;
// Frame ids are 32-bit and frame 0 is never a frame (calico/page_id.h).
inline constexpr uint64_t kMaxTierFrames = uint64_t{UINT32_MAX} - 1;
// 10 us per line is 20x the slowest switched-CXL figures; a slower tier is storage, which
// the pool's disk tier models, not memory.
inline constexpr double kMaxExtraLatencyNs = 10'000;
// Below 1 MiB/s one 4 KB migration would take 4 ms: a typo, not a memory link.
inline constexpr double kMinMigrationBytesPerS = double(1 << 20);
// 1 TB/s is ten times any socket or CXL link.
inline constexpr double kMaxMigrationBytesPerS = 1e12;
// The token bucket's capacity: a burst of 64 4 KB pages passes unthrottled (12.6 us at
// 20.8 GB/s), so that one promotion batch is smooth but a demotion batch is paced.
inline constexpr uint64_t kDefaultBurstBytes = uint64_t{256} << 10;
inline constexpr uint64_t kMaxBurstBytes = uint64_t{1} << 30;
// NUMA node numbers must fit the mbind mask (numa_binding.h).
inline constexpr int kMaxNumaNodes = 1024;

inline constexpr double kRemoteNumaExtraLatencyNs = 70;
inline constexpr double kRemoteNumaMigrationBytesPerS = 20.8e9;
inline constexpr double kCxlExtraLatencyNs = 170;
inline constexpr double kCxlMigrationBytesPerS = 17.8e9;

struct TierConfig {
  TierKind kind = TierKind::kEmulated;
  uint64_t frames = 0;
  size_t page_size = 4096;                // 4096, 8192 or 16384 (as FrameArena)
  // kEmulated only:
  double extra_latency_ns = kRemoteNumaExtraLatencyNs;  // charged per touched cache line
  double migration_bytes_per_s = kRemoteNumaMigrationBytesPerS;  // 0: copies unthrottled
  uint64_t burst_bytes = kDefaultBurstBytes;             // token bucket capacity
  // kNuma only:
  int numa_node = -1;

  static TierConfig local(uint64_t frames, size_t page_size = 4096);
  static TierConfig remote_numa(uint64_t frames, size_t page_size = 4096);
  static TierConfig cxl(uint64_t frames, size_t page_size = 4096);
  static TierConfig numa(uint64_t frames, int node, size_t page_size = 4096);
  // By name, as the benchmarks' --far-tier and the Python API's far_tier take it:
  // "remote-numa", "cxl", "local" or "numa:<node>".
  // Errors: kInvalidArgument naming `name` when it is none of these.
  static TierConfig named(std::string_view name, uint64_t frames, size_t page_size = 4096);

  // The frames' bytes, (frames + 1) * page_size as FrameArena maps them (frame 0 unused).
  // Pre: validate() passed.
  uint64_t bytes() const { return (frames + 1) * page_size; }

  // e.g. "emulated(+70 ns/line, 20800 MB/s, burst 256 KiB), 1000 x 4096 B".
  std::string describe() const;
};

// Throws Error(kInvalidArgument) naming the parameter and its value when `c` is not
// usable: zero frames, a bad page size, more bytes than kMaxTierBytes or the process's
// RLIMIT_AS, a negative / NaN / absurd latency, a bandwidth outside its bounds, a burst
// below one page, or (kNuma) a node that does not exist or has no memory on this machine.
void validate(const TierConfig& c);

// validate(c), and kInvalidArgument when c.kind is not `expected` (a tier's constructor).
void validate(const TierConfig& c, TierKind expected);

}  // namespace calico::memory::tiers
