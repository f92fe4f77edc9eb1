// scan: the heap-scan experiment of [Calico] Table 2 / Figure 1a-b on every translation
// variant (micro.h lists the sibling experiments). SUM over one 8-byte column of fixed-size
// rows (1024 bytes in 8 KB pages by default), pages visited in block order (sequential) and
// in one random permutation (B-tree-leaf-like order), with optimistic reads (and, unless
// disabled, shared pins), everything resident. Each translation gets its own pool loaded
// with identical rows; the runs are interleaved (micro/harness.h). Reports ns per page,
// pages/s, speedups against array and direct, counters, and the machine's single-thread
// memory read bandwidth for scale; checks every sum.
#pragma once

#include <cstdint>
#include <string>

#include "micro/harness.h"

namespace calico::bench {

struct ScanConfig {
  micro::Common common;
  uint64_t data_mb = 1024;  // per translation
  uint64_t pool_mb = 0;     // 0: data + 25% + 64 MB (everything resident)
  size_t page_size = 8192;
  size_t row_bytes = 1024;
  uint32_t prefetch_distance = 0;
  bool pinned = true;       // also run the pinned (shared latch) workloads
};

// Returns 0 on success, 1 when a sum was wrong.
int run_scan(const ScanConfig& cfg);

}  // namespace calico::bench
