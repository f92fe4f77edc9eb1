// Datasets of the vector-search benchmark: base vectors, query vectors and exact ground
// truth, generated or loaded, and cached on disk.
//
// Entry points: dataset_name(spec), load_or_generate(spec, cache_dir).
//
// A spec is either
//   kind "clustered": the SIFT-like generator of synthetic.h (n rows of dim, `clusters`
//       clusters, `queries` queries of the query stream, all from `seed`), cached as
//       <cache_dir>/<name>/{base.fvecs, query.fvecs, gt.ivecs, manifest}; or
//   kind "embedding": the text-embedding-like generator of synthetic.h (unit vectors, a
//       common mean direction, a decaying spectrum, `clusters` topics; search it with the
//       inner product), cached the same way; or
//   kind "files": base and query .fvecs/.bvecs files (the first max_base_rows / max_queries
//       rows) and an optional .ivecs ground truth. When none is given, or the base is cut
//       by max_base_rows, or the given one does not fit (rows != queries, fewer than
//       gt_k ids), the ground truth is computed and cached as <cache_dir>/<name>/gt.ivecs.
// The ground truth holds the gt_k (default 100) nearest base ids per query, closest first,
// ties by id (ground_truth.h); for cosine it is computed on normalised vectors. The vectors
// themselves are kept as generated or read: indexes normalise on insert and on query.
//
// Cache invariant: a cached file is used only when the directory's manifest (written last,
// after every data file) names it with its size and CRC32C and the file matches both and
// has the expected shape. Files are written under temporary names and renamed, so a crash
// leaves either the old file or the new one; anything missing, truncated or corrupt is
// regenerated (with a note on stderr), and a regenerated base or query file forces a new
// ground truth.
#pragma once

#include <cstdint>
#include <string>

#include "vector/data/vector_files.h"
#include "vector/distance.h"

namespace calico::bench::data {

struct DatasetSpec {
  std::string kind = "clustered";  // "clustered" | "embedding" | "files"
  vector::Metric metric = vector::Metric::kL2;
  // kinds "clustered" and "embedding" (clusters: its topics)
  uint64_t n = 1'000'000;
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint64_t queries = 1000;
  uint64_t seed = 42;
  // kind "files"
  std::string base_path;
  std::string query_path;
  std::string ground_truth_path;  // optional
  uint64_t max_base_rows = kAllRows;
  uint64_t max_queries = kAllRows;
  // both
  uint32_t gt_k = 100;
  unsigned threads = 0;  // generator and ground truth; 0 = hardware threads
  bool verbose = true;   // progress and cache notes on stderr
};

struct Dataset {
  FloatMatrix base;
  FloatMatrix queries;
  IdMatrix ground_truth;  // queries.rows x (at least gt_k) ids
  vector::Metric metric = vector::Metric::kL2;
  std::string name;  // dataset_name(spec)
  std::string dir;   // the cache directory of this dataset
  // What this call had to make (false when everything came from the cache or the files).
  bool generated_vectors = false;
  bool computed_ground_truth = false;
};

// "clustered-n1000000-d128-c1000-q1000-s42-l2" (or "embedding-..."), or for files
// "files-<base file stem>-n<rows or all>-q<rows or all>-<metric>".
// Errors: kInvalidArgument for an unknown kind or missing paths.
std::string dataset_name(const DatasetSpec& spec);
// dataset_name less its queries part ("clustered-n1000000-d128-c1000-s42-l2"): what names the
// base vectors alone, so an index built from them serves every query set of the same base
// (generated queries are a stream of their own: synthetic.h). Errors: as dataset_name.
std::string base_name(const DatasetSpec& spec);

// Loads the dataset from the cache (or the spec's files), making whatever is missing.
// Errors: kInvalidArgument for a bad spec or malformed input files (not cached ones: those
// are regenerated), kIoError when the cache cannot be written.
Dataset load_or_generate(const DatasetSpec& spec, const std::string& cache_dir);

}  // namespace calico::bench::data
