// calico_bench vector-codes: the vector codes (src/vector/quantizer.h: RaBitQ, PQ) measured
// for larger-than-memory search, which keeps every code in memory, ranks by estimated
// distance and re-ranks the best R exactly from pool pages (docs/results/vector_codes.md).
//
// One run:
//   1. loads or generates the dataset with its exact ground truth (bench/vector/data/, cached
//      in --cache-dir, shared with `calico_bench vector`);
//   2. per quantiser spec: trains on the first --train-rows base rows (generated rows are in
//      random order), encodes every base row (one thread), and for every query: prepare, then
//      estimate all n codes (timed together: the estimate throughput), keep the best max(R),
//      re-rank the best R by the exact kernel distance for each R, recall@k against the
//      ground truth;
//   3. prints a table and appends one JSON line per spec (its configuration, the machine and
//      build, the results).
// Self-check (STYLE.md 10): every model goes through serialize() / load_quantizer() and must
// give the same estimates for the first query; recall is monotone in R by construction and
// is checked to be. Returns 0, or 1 when a check failed.
//
// Specs: "rabitq:<bits>" or "rabitq:<bits>:<clusters>" (bits 1, 2, 4; clusters <= 256),
// "pq:<m>" (8-bit PQ with m subspaces) or "pq:dim/<d>" (m = dim / d).
// Metric of the codes: l2 for l2 data; the embedding set's unit vectors under ip are coded
// as kCosine (the same ranking; PQ's cosine table is the one that works on such data,
// src/vector/pq.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calico::bench {

struct VectorCodesConfig {
  std::string dataset = "clustered";  // "clustered" | "embedding"
  uint64_t n = 100'000;
  uint32_t dim = 128;  // embedding: 384 unless given
  uint32_t clusters = 1000;
  uint32_t queries = 1000;
  uint64_t data_seed = 42;
  std::string metric = "l2";  // embedding: ip unless given
  std::string cache_dir = "./calico-vector-data";
  uint64_t train_rows = 25'000;
  std::vector<std::string> specs = {"rabitq:1", "rabitq:2", "rabitq:4", "rabitq:1:256", "rabitq:4:256",
                                    "pq:dim/8", "pq:dim/4", "pq:dim/2"};
  std::vector<uint32_t> rerank = {10, 20, 50, 100, 200};
  uint32_t k = 10;
  unsigned train_threads = 2;  // k-means threads (PQ, RaBitQ clusters)
  std::string json_path;
};

int run_vector_codes(const VectorCodesConfig& cfg);

}  // namespace calico::bench
