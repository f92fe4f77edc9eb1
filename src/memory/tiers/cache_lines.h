// Cache-line arithmetic of the tier model: how many lines an access of a byte range touches.
// The emulated far tier charges its extra latency per touched line (emulated_far_tier.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace calico::memory::tiers {

// The unit of a memory access on every CPU Calico targets (x86-64, and AArch64 servers).
inline constexpr size_t kCacheLineBytes = 64;

// The number of distinct cache lines that [offset, offset + len) overlaps, with lines
// aligned to multiples of kCacheLineBytes from offset 0 (frames are page aligned, so a frame
// offset and an address give the same count). 0 for len == 0. Pre: offset + len does not
// overflow.
constexpr uint64_t lines_touched(uint64_t offset, uint64_t len) {
  if (len == 0) return 0;
  return (offset + len - 1) / kCacheLineBytes - offset / kCacheLineBytes + 1;
}

inline uint64_t lines_touched_at(const void* addr, size_t len) {
  return lines_touched(reinterpret_cast<uintptr_t>(addr), len);
}

static_assert(lines_touched(0, 0) == 0);
static_assert(lines_touched(0, 1) == 1);
static_assert(lines_touched(0, 64) == 1);
static_assert(lines_touched(63, 2) == 2);
static_assert(lines_touched(64, 64) == 1);
static_assert(lines_touched(1, 64) == 2);
static_assert(lines_touched(0, 4096) == 64);

}  // namespace calico::memory::tiers
