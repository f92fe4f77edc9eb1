// demo: the README's main job. Loads a space larger than the pool, then runs concurrent
// random reads (optimistic and pinned) and writes, and reports throughput, hit rate,
// evictions, translation memory and huge-page backing. Every read checks the page pattern.
#pragma once

#include <cstdint>
#include <string>

namespace calico::bench {

struct DemoConfig {
  std::string data_dir = "./calico-demo-data";
  uint64_t data_mb = 1024;
  uint64_t pool_mb = 256;
  size_t page_size = 4096;
  unsigned threads = 2;
  double seconds = 10;
  double write_fraction = 0.2;
  double optimistic_fraction = 0.6;  // of the reads; the rest pin shared
  std::string distribution = "zipf";  // zipf | uniform
  double zipf_theta = 0.99;
  unsigned prefetch_group = 0;  // > 0: every read first prefetches this many random pages
  uint64_t seed = 42;
  bool atomic_flush = true;  // PoolOptions::atomic_flush (the rollback journal)
  bool keep_data = false;
  std::string json_path;  // append one JSON line per run when set
};

// Returns 0 on success, 1 when a check failed.
int run_demo(const DemoConfig& cfg);

}  // namespace calico::bench
