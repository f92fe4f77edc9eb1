// calico_bench vector-filtered: where a filtered HNSW search should stop walking the graph
// and scan the allowed rows exactly (HnswSearchOptions::exact_scan_below).
//
// A filter allowing m of n rows can be answered two ways (include/calico/index/hnsw.h): a
// graph search that keeps only allowed nodes among its results, which visits about
// ef / (m / n) nodes, or an exact scan of the m rows. The first costs more as m falls, the
// second as m grows; their costs cross near m^2 = c * ef * n, and the index's automatic
// choice needs c. One run:
//   1. loads or generates the dataset (bench/vector/data/dataset.h) and builds one HNSW in a
//      resident scratch pool (every case searches the same graph);
//   2. for each filter kind, fraction and ef, draws the allow-list (uncorrelated: each row
//      with probability f; correlated: the nearest n / clusters rows of random anchor rows,
//      so that allowed rows lie in a few regions, as a tenant's documents do), and computes
//      the exact top-k among the allowed rows of every query;
//   3. measures both methods on it, forced (exact_scan_below 1 and 2^32 - 1), interleaved in
//      rounds (micro/harness.h: medians, and the paired speedup of the exact scan over the
//      graph search), recall@k of each;
//   4. prints, per kind and ef, the fractions where the exact scan was faster, and c at the
//      crossing (interpolated in log m between the two fractions around it).
// JSON lines: one per case (micro::report), then one summary line per kind and ef.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calico::bench {

struct FilteredConfig {
  std::string dataset = "clustered";  // clustered or embedding (bench/vector/data/synthetic.h)
  uint64_t n = 100'000;
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint32_t queries = 300;
  uint64_t data_seed = 42;
  std::string metric;  // empty: l2 for clustered, ip for embedding
  uint32_t M = 16;
  uint32_t ef_construction = 100;
  unsigned build_threads = 2;
  std::vector<uint32_t> ef = {16, 64};
  std::vector<double> fractions = {0.005, 0.01, 0.02, 0.05, 0.1, 0.2};
  std::vector<std::string> kinds = {"uncorrelated", "correlated"};
  uint32_t k = 10;
  unsigned repeat = 3;
  double min_seconds = 0.5;
  std::string cache_dir = "./calico-vector-data";
  std::string data_dir = "./calico-vector-pools";
  std::string json_path;
};

// Returns 0, or 1 when a self-check failed (a run's results differ from the first run of the
// same case). Bad options throw calico::Error.
int run_vector_filtered(const FilteredConfig& cfg);

}  // namespace calico::bench
