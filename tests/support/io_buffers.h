// Test support for direct I/O: 4 KB-aligned buffers and a byte pattern per (seed, offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace calico::testing {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBuf = std::unique_ptr<std::byte, FreeDeleter>;

// A zeroed buffer of `size` bytes aligned for O_DIRECT.
inline AlignedBuf aligned_buf(size_t size) {
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, size));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return AlignedBuf(p);
}

inline std::byte pattern_byte(uint32_t seed, size_t i) { return static_cast<std::byte>((seed * 131 + i * 7) & 0xFF); }

// Fills `buf` with a pattern unique to (seed, offset).
inline void fill(std::byte* buf, size_t size, uint32_t seed) {
  for (size_t i = 0; i < size; ++i) buf[i] = pattern_byte(seed, i);
}

inline bool has_pattern(const std::byte* buf, size_t size, uint32_t seed) {
  for (size_t i = 0; i < size; ++i) {
    if (buf[i] != pattern_byte(seed, i)) return false;
  }
  return true;
}

}  // namespace calico::testing
