// calico_bench vector-coded: larger-than-memory vector search, the coded HNSW
// (calico/index/coded_hnsw.h: RaBitQ codes resident, level-0 graph and vectors in pool pages,
// re-rank as one group read) against the full-vector HNSW (calico/index/hnsw.h), both with
// the same memory: a pool of --pool-fraction of the HNSW's bytes, and for the coded index
// that pool less its resident codes.
//
// One run:
//   1. loads or generates the dataset with its exact ground truth (bench/vector/data/, cached
//      in --cache-dir, shared with `calico_bench vector`): clustered, embedding or files;
//   2. builds both indexes in one pool large enough to hold them (--build-threads threads
//      adding rows), flushes, closes; with --reuse, a directory built before from the same
//      base vectors and parameters (whatever the queries) is searched again instead (its
//      build times are kept in it);
//   3. per memory budget (--pool-fraction, a comma list) and index: opens the built
//      directory with the small pool (O_DIRECT: no OS page cache), searches every query once
//      (recall@k against the ground truth, and the pool's warm-up), then per round (--rounds)
//      and per setting and thread count, in that order (so settings interleave), searches
//      for --seconds on T threads, each with its own state (QPS; pages read per query =
//      faults + prefetch reads of the pool over the timed region; per-query latency, whose
//      p50 and p99 are reported); medians over the rounds;
//   4. prints a table and appends one JSON line per setting (configuration, machine, load
//      average before and after, results).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calico::bench {

struct VectorCodedConfig {
  std::string dataset = "clustered";  // clustered, embedding or files (--base, --query, --gt)
  std::string metric = "l2";
  std::string base_path, query_path, gt_path;
  uint64_t n = 100'000;
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint32_t queries = 1000;
  uint64_t data_seed = 42;
  std::string cache_dir = "./calico-vector-data";
  std::string dir = "./calico-coded-bench";  // built indexes and pool files
  std::vector<double> pool_fractions = {0.25};  // of the full-vector HNSW's bytes
  std::vector<uint32_t> threads = {1};
  uint32_t rounds = 1;
  bool reuse = false;  // keep the built indexes in --dir and search them again next time
  uint32_t M = 16;
  uint32_t ef_construction = 100;
  uint32_t bits = 2;
  uint32_t pq_bytes = 0;  // CodedHnswParams::pq_bytes (0: RaBitQ of `bits`)
  float alpha = 1.2f;  // CodedHnswParams::alpha
  uint32_t build_threads = 2;
  std::vector<uint32_t> hnsw_ef = {32, 64, 128};
  std::vector<uint32_t> coded_ef = {64, 100, 200};
  std::vector<uint32_t> rerank = {20, 50};
  std::vector<uint32_t> entries = {0};  // CodedHnswSearchOptions::entries
  std::vector<uint32_t> prefetch_width = {4};  // CodedHnswSearchOptions::prefetch_width (0: no prefetch)
  // Shares of the coded index's memory beyond its codes given to pinned rows
  // (BasicCodedHnsw::pin_rows), the pool taking the rest; each share is its own index setup.
  std::vector<double> pin_share = {0};
  std::vector<uint32_t> batched = {1};  // CodedHnswSearchOptions::batched (0 or 1)
  uint32_t pin_sample = 1000;  // pin_rows' sample searches
  uint32_t k = 10;
  double seconds = 1.0;
  std::string json_path;
};

int run_vector_coded(const VectorCodedConfig& cfg);

}  // namespace calico::bench
