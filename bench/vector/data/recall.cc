#include "vector/data/recall.h"

#include <algorithm>

#include <fmt/format.h>

#include "calico/error.h"

namespace calico::bench::data {

std::vector<uint32_t> ids_of(const std::vector<vector::Neighbor>& result) {
  std::vector<uint32_t> ids(result.size());
  std::transform(result.begin(), result.end(), ids.begin(), [](const vector::Neighbor& n) { return n.id; });
  return ids;
}

std::vector<std::vector<uint32_t>> ids_of(const std::vector<std::vector<vector::Neighbor>>& results) {
  std::vector<std::vector<uint32_t>> ids;
  ids.reserve(results.size());
  for (const auto& r : results) ids.push_back(ids_of(r));
  return ids;
}

double recall_at_k(const std::vector<std::vector<uint32_t>>& result_ids, const IdMatrix& gt, uint32_t k) {
  if (result_ids.size() != gt.rows) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("recall: {} results for {} ground-truth queries", result_ids.size(), gt.rows));
  }
  if (k == 0 || k > gt.dim) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("recall: k = {} must be in 1..{}", k, gt.dim));
  }
  if (gt.rows == 0) return 0.0;
  double sum = 0;
  std::vector<uint32_t> truth(k), found;
  for (uint64_t q = 0; q < gt.rows; ++q) {
    std::copy(gt.row(q), gt.row(q) + k, truth.begin());
    std::sort(truth.begin(), truth.end());
    const auto& r = result_ids[q];
    found.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(k, r.size())));
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    uint32_t hits = 0;
    for (uint32_t id : found) hits += std::binary_search(truth.begin(), truth.end(), id) ? 1 : 0;
    sum += static_cast<double>(hits) / k;
  }
  return sum / static_cast<double>(gt.rows);
}

double recall_at_k(const std::vector<std::vector<vector::Neighbor>>& results, const IdMatrix& gt, uint32_t k) {
  return recall_at_k(ids_of(results), gt, k);
}

}  // namespace calico::bench::data
