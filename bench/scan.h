// scan: the heap-scan experiment of calico.txt Table 2. SUM over one 8-byte column of
// fixed-size rows (1024 bytes in 8 KB pages by default), pages visited in block order
// (sequential) and in a random permutation (B-tree-leaf-like order), with optimistic or
// pinned page reads, everything resident. Reports pages/s and bytes/s next to the machine's
// measured single-thread memory read bandwidth, and checks every sum.
#pragma once

#include <cstdint>
#include <string>

namespace calico::bench {

struct ScanConfig {
  std::string data_dir = "./calico-scan-data";
  uint64_t data_mb = 1024;
  uint64_t pool_mb = 0;  // 0: data + 25% + 64 MB (everything resident)
  size_t page_size = 8192;
  size_t row_bytes = 1024;
  unsigned repeat = 5;
  uint32_t prefetch_distance = 0;
  uint64_t seed = 42;
  std::string json_path;
};

// Returns 0 on success, 1 when a sum was wrong.
int run_scan(const ScanConfig& cfg);

}  // namespace calico::bench
