// CoarseRanker: the nprobe centroids nearest to a query (the coarse quantiser of IVF,
// include/calico/index/ivf.h), for one query or a block of queries.
//
// Principal entry points:
//   CoarseRanker(centroids, k, dim, metric)     keeps a pointer to the k x dim centroids
//   rank(q, nprobe, scratch, out)               one query: a tiled kernel pass
//   rank_block(qs, nq, nprobe, scratch, out)    nq queries: one matrix product (BLAS sgemm)
//
// Contract (both entry points, every metric): out receives the nprobe smallest pairs
// (distance_kernel(metric)(q, centroid l, dim), l), ascending by Neighbor's order (distance,
// then list). That is exact, bit for bit the same as ranking every centroid with the
// one-vector kernel: rank() computes those values (distance_many_kernel is bit-identical);
// rank_block() first computes every distance from the product Q C^T (L2: |q|^2 + |c|^2 -
// 2 q.c; ip: 1 - q.c), whose rounding differs, keeps every list whose approximate distance
// is within 2 M of the nprobe-th smallest one, where M bounds |approximate - kernel| for
// any summation order (M = 4 (dim + 4) 2^-24 (|q| + max |c|)^2 for L2, 4 (dim + 4) 2^-24
// (1 + |q| max |c|) for ip: twice the classical gamma_dim bound of both), and ranks those
// by the kernel. Why no list is lost: a list whose approximation is above t + 2M (t = the
// nprobe-th approximation) has kernel distance above t + M, while nprobe lists have kernel
// distance at most t + M. When the norms are so large that the bound is not finite, every
// centroid goes through the kernel.
// Threads: const after construction; scratch is per thread. rank_block() sets OpenBLAS to
// one thread once per process (openblas_set_num_threads(1), before its first sgemm), so
// every sgemm runs on its caller's thread (concurrent callers share only OpenBLAS's
// buffer allocator, thread-safe in its threaded builds): callers bring their own threads,
// as the IVF bench does; under TSan, ConcurrentSearchesWithAdd runs sgemm in two threads.
// (Debian's pthread OpenBLAS still starts its idle worker pool when the library is loaded,
// in every process that links calico; the workers are never given work.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico::vector {

class CoarseRanker {
 public:
  struct Scratch {
    std::vector<float> row;       // k: one query's kernel distances (rank)
    std::vector<float> block;     // kBlockQueries x k: the product (rank_block)
    std::vector<Neighbor> order;  // k (rank_block); the selection heap (rank)
  };
  // Queries per sgemm in rank_block (larger blocks are split).
  static constexpr size_t kBlockQueries = 32;

  CoarseRanker() = default;
  // centroids: k x dim, row-major, finite; must outlive the ranker.
  CoarseRanker(const float* centroids, uint32_t k, uint32_t dim, Metric metric);

  // out[0 .. nprobe) as in the header. Pre: 1 <= nprobe <= k; q finite (kCosine: normalised).
  void rank(const float* q, uint32_t nprobe, Scratch& s, Neighbor* out) const;
  // out[i * nprobe .. (i + 1) * nprobe) for query qs + i * dim, i < nq. Same preconditions.
  void rank_block(const float* qs, size_t nq, uint32_t nprobe, Scratch& s, Neighbor* out) const;

  uint32_t k() const { return k_; }

 private:
  // out[0 .. nprobe) = the nprobe smallest (row[l], l) for l < n, ascending; heap is scratch.
  static void select_smallest(const float* row, uint32_t n, uint32_t nprobe, std::vector<Neighbor>& heap,
                              Neighbor* out);

  const float* centroids_ = nullptr;
  uint32_t k_ = 0, dim_ = 0;
  Metric metric_ = Metric::kL2;
  DistanceFn one_ = nullptr;
  DistanceManyFn many_ = nullptr;
  std::vector<float> sq_norms_;  // |c|^2 in float (the L2 approximation adds it)
  double max_norm_ = 0;          // max |c|, computed in double and rounded up
};

}  // namespace calico::vector
