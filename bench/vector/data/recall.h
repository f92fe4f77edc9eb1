// Recall of approximate search results against exact ground truth.
//
//   recall@k = mean over queries of |result top-k  ∩  ground-truth top-k| / k
//
// A result's top-k is its first k entries (results are sorted closest first); a result with
// fewer than k entries counts the missing ones as misses, and an id repeated in a result
// counts once.
#pragma once

#include <cstdint>
#include <vector>

#include "vector/data/vector_files.h"
#include "vector/neighbor.h"

namespace calico::bench::data {

// Errors: kInvalidArgument when results.size() != gt.rows, k is 0 or k > gt.dim.
double recall_at_k(const std::vector<std::vector<vector::Neighbor>>& results, const IdMatrix& gt, uint32_t k);
double recall_at_k(const std::vector<std::vector<uint32_t>>& result_ids, const IdMatrix& gt, uint32_t k);

// The ids of search results, in order.
std::vector<uint32_t> ids_of(const std::vector<vector::Neighbor>& result);
std::vector<std::vector<uint32_t>> ids_of(const std::vector<std::vector<vector::Neighbor>>& results);

}  // namespace calico::bench::data
