// calico_bench vector-coded: larger-than-memory vector search, the coded HNSW
// (calico/index/coded_hnsw.h: RaBitQ codes resident, level-0 graph and vectors in pool pages,
// re-rank as one group read) against the full-vector HNSW (calico/index/hnsw.h), both with
// the same memory: a pool of --pool-fraction of the HNSW's bytes, and for the coded index
// that pool less its resident codes.
//
// One run:
//   1. loads or generates the dataset with its exact ground truth (bench/vector/data/, cached
//      in --cache-dir, shared with `calico_bench vector`);
//   2. builds both indexes in one pool large enough to hold them (--build-threads threads
//      adding rows), flushes, closes;
//   3. per index and search setting: opens the built directory with the small pool
//      (O_DIRECT), searches every query once (recall@k against the ground truth), then
//      searches for --seconds on one thread (QPS, pages read per query = faults + prefetch
//      reads of the pool over the timed region);
//   4. prints a table and appends one JSON line per setting (configuration, machine, results).
// Self-check (STYLE.md 10): every coded result's distance is the exact distance of its row
// to the query (the index re-ranks exactly); returns 1 when a check failed, else 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calico::bench {

struct VectorCodedConfig {
  uint64_t n = 100'000;
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint32_t queries = 1000;
  uint64_t data_seed = 42;
  std::string cache_dir = "./calico-vector-data";
  std::string dir = "./calico-coded-bench";  // built indexes and pool files
  double pool_fraction = 0.25;               // of the full-vector HNSW's bytes
  uint32_t M = 16;
  uint32_t ef_construction = 100;
  uint32_t bits = 1;
  uint32_t build_threads = 2;
  std::vector<uint32_t> hnsw_ef = {32, 64, 128};
  std::vector<uint32_t> coded_ef = {64, 100, 200};
  std::vector<uint32_t> rerank = {20, 50};
  uint32_t k = 10;
  double seconds = 1.0;
  std::string json_path;
};

int run_vector_coded(const VectorCodedConfig& cfg);

}  // namespace calico::bench
