// Test support for the vector indexes: a seeded clustered data set with queries, exact
// top-k by brute force, recall. Shared by the index tests and vector_tool (the second
// process of the persistence tests), so that both processes generate the same rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico::testing {

using vector::Metric;
using vector::Neighbor;

struct Data {
  uint32_t dim = 0;
  uint64_t n = 0;
  std::vector<float> rows;     // n x dim
  std::vector<float> queries;  // q x dim
  uint64_t num_queries() const { return queries.size() / dim; }
  const float* row(uint64_t i) const { return rows.data() + i * dim; }
  const float* query(uint64_t i) const { return queries.data() + i * dim; }
};

// `clusters` Gaussian clusters (centres uniform in [-10, 10]^dim, deviation 1.5); queries
// are rows plus noise of deviation 0.5.
inline Data clustered(uint64_t n, uint32_t dim, uint32_t clusters, uint32_t queries, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-10, 10);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centers(size_t{clusters} * dim);
  for (float& c : centers) c = u(rng);
  Data d;
  d.dim = dim;
  d.n = n;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t c = rng() % clusters;
    for (uint32_t j = 0; j < dim; ++j) d.rows.push_back(centers[c * dim + j] + 1.5f * g(rng));
  }
  for (uint32_t q = 0; q < queries; ++q) {
    const uint64_t r = rng() % n;
    for (uint32_t j = 0; j < dim; ++j) d.queries.push_back(d.rows[r * dim + j] + 0.5f * g(rng));
  }
  return d;
}

// The exact top-k by brute force with the same kernel (kCosine: normalised copies).
inline std::vector<Neighbor> brute_force(const Data& d, const float* q, Metric metric, uint32_t k) {
  const vector::DistanceFn fn = vector::distance_kernel(metric);
  std::vector<float> qv(q, q + d.dim), rv(d.dim);
  if (metric == Metric::kCosine) vector::normalize(qv.data(), d.dim);
  std::vector<Neighbor> all;
  for (uint64_t i = 0; i < d.n; ++i) {
    rv.assign(d.row(i), d.row(i) + d.dim);
    if (metric == Metric::kCosine) vector::normalize(rv.data(), d.dim);
    all.push_back({fn(qv.data(), rv.data(), d.dim), static_cast<uint32_t>(i)});
  }
  const size_t m = std::min<size_t>(k, all.size());
  std::partial_sort(all.begin(), all.begin() + m, all.end());
  all.resize(m);
  return all;
}

inline std::vector<std::vector<Neighbor>> reference(const Data& d, Metric metric, uint32_t k) {
  std::vector<std::vector<Neighbor>> out;
  for (uint64_t q = 0; q < d.num_queries(); ++q) out.push_back(brute_force(d, d.query(q), metric, k));
  return out;
}

inline double recall(const std::vector<Neighbor>& got, const std::vector<Neighbor>& want) {
  std::set<uint32_t> ids;
  for (const Neighbor& x : want) ids.insert(x.id);
  size_t hit = 0;
  for (const Neighbor& x : got) hit += ids.count(x.id);
  return double(hit) / double(want.size());
}

// Mean recall of `got` against `want`, query by query.
inline double mean_recall(const std::vector<std::vector<Neighbor>>& got, const std::vector<std::vector<Neighbor>>& want) {
  double sum = 0;
  for (size_t q = 0; q < want.size(); ++q) sum += recall(got[q], want[q]);
  return want.empty() ? 1.0 : sum / double(want.size());
}

}  // namespace calico::testing
