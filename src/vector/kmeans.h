// k-means clustering of in-memory float rows (Lloyd's algorithm), used to train the coarse
// quantiser of the IVF index (include/calico/index/ivf.h).
//
// Principal entry points:
//   kmeans(data, n, dim, params)        -> KmeansResult {centroids, assignment, sizes, ...}
//   assign_nearest(rows, n, dim, centroids, k, metric, threads, out, dist)
//                                       the nearest centroid of every row (multi-threaded)
//   nearest_centroid(v, centroids, k, dim, fn, &dist)   one row
//
// Algorithm:
//   1. Initial centroids: k-means++ (greedy: 2 + ln k candidates per step, the one that
//      lowers the potential most is kept; weights are squared L2 distances whatever the
//      metric) or k distinct rows drawn at random; both seeded by params.seed. kAuto takes
//      k-means++ when n * k * (2 + ln k) <= kPlusPlusBudget, else random rows.
//   2. params.iters Lloyd iterations: assign every row to its nearest centroid by the
//      metric's kernel (vector::distance_kernel; ties go to the lowest centroid index),
//      then move every centroid to the mean of its rows (kCosine: the mean, normalised).
//      A centroid left without rows is repaired by splitting the largest cluster that has
//      a row off its centroid: it moves onto that cluster's row farthest from the
//      cluster's centroid, and the cluster's row count is halved for the choice of the
//      next repair. Clusters whose rows all coincide with their centroid are not split.
//   3. A final assignment, so that `assignment` and `sizes` describe the returned centroids.
//      Clusters may still be empty at the end only when rows repeat (fewer distinct rows
//      than k).
//
// Determinism: the result depends only on (data, n, dim, params minus threads): assignment
// is per row, sums are accumulated in double in row order on one thread.
// kCosine: rows must already be unit length (normalize() them); centroids are kept so.
// Threads: the assignment steps run on params.threads threads (std::thread per step);
// the function is otherwise self-contained and may be called from several threads at once.
// Errors: calico::Error kInvalidArgument (dim 0, n 0, k 0 or k > n, non-finite data).
#pragma once

#include <cstdint>
#include <vector>

#include "vector/distance.h"

namespace calico::vector {

enum class KmeansInit { kAuto, kPlusPlus, kRandom };

struct KmeansParams {
  uint32_t k = 0;
  Metric metric = Metric::kL2;
  uint32_t iters = 10;  // Lloyd iterations (0: the initial centroids are returned)
  uint64_t seed = 42;
  KmeansInit init = KmeansInit::kAuto;
  uint32_t threads = 0;  // 0: std::thread::hardware_concurrency(), at most kMaxThreads
};

struct KmeansResult {
  uint32_t k = 0;
  uint32_t dim = 0;
  std::vector<float> centroids;      // k x dim, row-major
  std::vector<uint32_t> assignment;  // n: each row's nearest centroid
  std::vector<uint64_t> sizes;       // k: rows assigned to each centroid
  double objective = 0;              // sum over rows of the distance to their centroid
  uint32_t empty_repairs = 0;        // centroids moved by splitting the largest cluster
  bool plus_plus = false;            // the initialisation used
};

// kAuto's limit on k-means++ work (distance evaluations).
inline constexpr double kPlusPlusBudget = 1e8;
inline constexpr uint32_t kMaxThreads = 64;

KmeansResult kmeans(const float* data, uint64_t n, uint32_t dim, const KmeansParams& params);

// The index of the centroid nearest to v by fn (ties: the lowest index), its distance in
// *dist when dist is not null. Pre: k >= 1.
uint32_t nearest_centroid(const float* v, const float* centroids, uint32_t k, uint32_t dim, DistanceFn fn,
                          float* dist = nullptr);

// out[i] = nearest_centroid(rows + i * dim, ...) for i < n, on `threads` threads (0: as in
// KmeansParams); dist[i] its distance when dist is not null.
void assign_nearest(const float* rows, uint64_t n, uint32_t dim, const float* centroids, uint32_t k, Metric metric,
                    uint32_t threads, uint32_t* out, float* dist = nullptr);

}  // namespace calico::vector
