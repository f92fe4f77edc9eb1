// calico_bench vector: vector search on the pool ([Calico] sections 3.3, 5.1, 6.2, 6.6).
//
// One run:
//   1. loads or generates the dataset (bench/vector/data/: a SIFT-like clustered set or .fvecs /
//      .ivecs files) with its exact ground truth, cached in --cache-dir;
//   2. builds each index (HNSW, IVF-Flat) once with the array translation in
//      <data-dir>/<index>-<dataset>-<params>/ and keeps it (build time, index size and the
//      parameters in built.json next to it), so that later runs and every translation
//      search the identical index; --rebuild forces a new build;
//   3. copies the built files once per (translation, pool size) and opens a pool on each
//      copy: "in memory" = pool larger than the index; a pool fraction f < 1 = pool of
//      f x index bytes with O_DIRECT files (larger than memory);
//   4. sweeps ef_search (HNSW) or nprobe (IVF) x threads; each case searches every query
//      once, queries handed out to the threads one at a time (IVF with --ivf-batch N > 1:
//      N at a time, searched by one search_batch call, as faiss ranks a batch's centroids
//      with one matrix product; HNSW with --hnsw-batch N > 1: N at a time in flight on the
//      thread, search_batch); a warm-up run, then --repeat
//      rounds with every case interleaved (micro/harness.h), medians;
//   5. reports per case recall@k (against the ground truth), QPS, the speedup over array
//      (paired per round), reads per query and achieved IOPS (pool faults + prefetch reads),
//      as a terminal table and JSON lines;
//   6. with --ablation, Figure 11 on HNSW: hash_open -> array 4 KB frames -> + huge pages ->
//      + optimistic reads -> + group prefetch (1 thread, --ablation-ef).
// The peers (hnswlib, faiss, usearch) run from bench/harness/peers/vector_peers.py on the same data
// files; bench/experiments/vector.sh runs both, interleaved, and bench/harness/report/vector_figures.py
// draws recall-vs-QPS.
// Returns 0, or 1 when a self-check failed (a run's results differ from the first run of
// the same case). Bad options throw calico::Error / std::runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace calico::bench {

inline constexpr uint32_t kMaxHnswBatch = 64;

struct VectorConfig {
  // Dataset (bench/vector/data/dataset.h).
  std::string dataset = "clustered";  // "clustered" (generated) or "files"
  uint64_t n = 1'000'000;
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint32_t queries = 1000;
  uint64_t data_seed = 42;
  std::string metric = "l2";
  std::string base_path, query_path, gt_path;  // dataset == "files"
  std::string cache_dir = "./calico-vector-data";
  // Indexes.
  std::vector<std::string> indexes = {"hnsw"};  // hnsw, ivf
  uint32_t M = 16;
  uint32_t ef_construction = 100;
  std::vector<uint32_t> ef = {16, 32, 50, 100};
  uint32_t nlist = 0;  // 0: 4 x sqrt(n), rounded to a power of two
  std::vector<uint32_t> nprobe = {1, 2, 4, 8, 16, 32};
  // IVF queries per search_batch call (1: search() per query, the default: blocks of 32
  // measured slower, docs/results/vector_ivf.md)
  uint32_t ivf_batch = 1;
  // HNSW queries in flight per thread, at most kMaxHnswBatch (search_batch: they take turns,
  // so that a thread keeps several expansions' reads on the device); a list is a sweep,
  // interleaved like the rest.
  std::vector<uint32_t> hnsw_batch = {1};
  uint32_t k = 10;
  // Runs.
  std::vector<std::string> translations = {"array"};
  std::vector<unsigned> threads = {1, 2};
  unsigned build_threads = 2;
  std::vector<double> pool_fractions = {0};  // 0: in memory; f in (0,1): pool = f x index bytes
  unsigned repeat = 3;
  double min_seconds = 1.0;  // a timed run repeats the whole query set until this long
  bool optimistic = true;
  bool prefetch = true;
  // HNSW read-ahead of the next candidates' neighbours when a hop reads pages
  // (HnswSearchOptions::lookahead); a list is a sweep, interleaved like the rest.
  std::vector<uint32_t> lookahead = {2};  // HnswSearchOptions' default (static_assert in vector.cc)
  // In-memory pools (fraction 0) load the index in block order before the warm-up run
  // (BufferPool::prewarm), as the peers read their whole index file at load: each list or
  // run of pages then sits in adjacent frames.
  bool prewarm = true;
  bool ablation = false;
  uint32_t ablation_ef = 50;
  // The pool's page size per index (4096, 8192 or 16384), for its build and every run;
  // indexes built at a size other than 4096 are kept apart (directory names end in
  // -p<size>). IVF defaults to 8 KB: a posting page then holds 15 records of dim 128 instead
  // of 7, and measured 1.1-1.3x the QPS of 4 KB pages (docs/results/vector_ivf.md, "Page size").
  size_t hnsw_page_size = 4096;
  size_t ivf_page_size = 8192;
  std::string data_dir = "./calico-vector-pools";
  std::string json_path;
  bool rebuild = false;
  bool build_only = false;
};

int run_vector(const VectorConfig& cfg);

// The passes [begin, end) of each of `repeat` timed runs of one case, from the seconds of
// every pass in order, replaying the harness's loop (micro/harness.cc: pass 0 is the
// warm-up; a run repeats passes until their seconds add up to min_seconds). An in-memory
// pass lasts milliseconds, too short for getrusage's CPU times, so the bench's reads,
// depths and CPU are taken over whole runs.
std::vector<std::pair<size_t, size_t>> timed_runs(const std::vector<double>& seconds, unsigned repeat,
                                                  double min_seconds);
// The median over `runs` of sum(amount) / sum(per) over each run's passes (0: no run).
double run_median(const std::vector<double>& amount, const std::vector<double>& per,
                  const std::vector<std::pair<size_t, size_t>>& runs);

}  // namespace calico::bench
