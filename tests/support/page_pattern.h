// PagePattern: self-checking page contents for the demo and the stress tests.
//
// A stamped payload is: [page id: 8][stamp: 8][filler up to `bytes`], where the filler is a
// splitmix64 stream seeded by (page id, stamp). check() recomputes it, so a torn write, a
// misdirected page, a stale frame or a lost update is caught, not just a bad checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "calico/page_id.h"
#include "calico/optimistic_reader.h"

namespace calico::test {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Writes the pattern for (pid, stamp) into `bytes` bytes at `page` (bytes % 8 == 0).
inline void stamp_pattern(std::byte* page, size_t bytes, PageId pid, uint64_t stamp) {
  std::memcpy(page, &pid.raw, 8);
  std::memcpy(page + 8, &stamp, 8);
  uint64_t state = pid.raw * 0x2545F4914F6CDD1Dull ^ stamp;
  for (size_t off = 16; off + 8 <= bytes; off += 8) {
    uint64_t v = splitmix64(state);
    std::memcpy(page + off, &v, 8);
  }
}

// The stamp stored in the page (meaningful only if check_pattern() passes).
inline uint64_t pattern_stamp(const std::byte* page) {
  uint64_t s;
  std::memcpy(&s, page + 8, 8);
  return s;
}
// The same, read from a page that may be changing: an optimistic reader (calico/optimistic_reader.h);
// meaningful only if the read validates.
CALICO_OPTIMISTIC_READER __attribute__((noinline)) inline uint64_t pattern_stamp_racy(const std::byte* page) {
  uint64_t s;
  __builtin_memcpy(&s, page + 8, 8);
  return s;
}

// Copies `bytes` of a page that may be changing under an optimistic read (the copy is used
// only if the read validates). An optimistic reader (calico/optimistic_reader.h): not instrumented by
// ThreadSanitizer, which cannot know about the validation; every use of the copy is.
CALICO_OPTIMISTIC_READER __attribute__((noinline)) inline void copy_page_racy(std::byte* dst, const std::byte* src,
                                                                             size_t bytes) {
  const volatile std::byte* s = src;
  for (size_t i = 0; i < bytes; ++i) dst[i] = s[i];
}

// True when `page` holds a complete pattern for `pid` (any stamp).
inline bool check_pattern(const std::byte* page, size_t bytes, PageId pid) {
  uint64_t raw, stamp;
  std::memcpy(&raw, page, 8);
  std::memcpy(&stamp, page + 8, 8);
  if (raw != pid.raw) return false;
  uint64_t state = pid.raw * 0x2545F4914F6CDD1Dull ^ stamp;
  for (size_t off = 16; off + 8 <= bytes; off += 8) {
    uint64_t v;
    std::memcpy(&v, page + off, 8);
    if (v != splitmix64(state)) return false;
  }
  return true;
}

// check_pattern() on a private copy of a page read optimistically.
inline bool check_pattern_racy(const std::byte* page, size_t bytes, PageId pid, uint64_t* stamp = nullptr) {
  thread_local std::vector<std::byte> copy;
  copy.resize(bytes);
  copy_page_racy(copy.data(), page, bytes);
  if (stamp != nullptr) *stamp = pattern_stamp(copy.data());
  return check_pattern(copy.data(), bytes, pid);
}

}  // namespace calico::test
