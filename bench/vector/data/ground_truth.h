// Exact k-nearest-neighbour ground truth by brute force with the SIMD distance kernel
// (vector/distance.h), multi-threaded.
//
// For each query, the k base rows with the smallest (distance, id), closest first: ties in
// distance are broken by the smaller id, so the answer is unique. For Metric::kCosine both
// sides are normalised (on copies) and compared with the inner-product kernel, as the
// indexes do.
//
// The loop is blocked for cache reuse: a worker takes a tile of kQueryTile queries and
// streams the base through it in tiles of kBaseTile rows, so each base tile is loaded once
// per query tile and stays in L2 while every query of the tile is compared with it.
#pragma once

#include <cstdint>
#include <vector>

#include "vector/data/vector_files.h"
#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico::bench::data {

struct GroundTruthOptions {
  uint32_t k = 100;
  unsigned threads = 0;   // 0 = hardware threads
  bool progress = false;  // a line on stderr every 5% (only for runs of more than ~1e10 flops)
};

// The k nearest base rows of every query with their distances: rows = queries.rows, each
// sorted ascending by (distance, id). Errors: kInvalidArgument when the dims differ, k is 0
// or greater than base.rows, or base.rows does not fit a uint32 id.
std::vector<std::vector<vector::Neighbor>> exact_neighbors(const FloatMatrix& base, const FloatMatrix& queries,
                                                           vector::Metric metric, const GroundTruthOptions& options);

// The ids of exact_neighbors: a queries.rows x k matrix.
IdMatrix exact_ground_truth(const FloatMatrix& base, const FloatMatrix& queries, vector::Metric metric,
                            const GroundTruthOptions& options);

}  // namespace calico::bench::data
