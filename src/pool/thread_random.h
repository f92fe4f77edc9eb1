// thread_random(): a per-thread xorshift64 stream for the pool's probabilistic choices
// (predictive promotion, pool/features/prediction.h; tier promotion, pool/features/tiering.h). Seeded from the
// thread's stack address on first use: no atomics, no shared cache line, never 0.
#pragma once

#include <cstdint>

namespace calico::pool {

inline uint64_t thread_random() {
  thread_local uint64_t state = 0;
  if (state == 0) {
    int anchor;
    state = (reinterpret_cast<uintptr_t>(&anchor) * 0x9E3779B97F4A7C15ULL) | 1;
  }
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

}  // namespace calico::pool
