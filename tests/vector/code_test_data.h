// Test data for the quantiser tests (rabitq_test.cc, pq_test.cc, quantizer_test.cc):
// isotropic Gaussian rows, clustered rows (the hard and the realistic case), exact
// distances, and the recall of "rank every code by its estimate, re-rank the best R by
// exact distance" against brute force.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "vector/distance.h"
#include "vector/quantizer.h"

namespace calico::vector::test {

// n x dim, N(0, 1) entries.
inline std::vector<float> gaussian_rows(size_t n, uint32_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n * dim);
  for (float& x : v) x = g(rng);
  return v;
}

// n x dim rows around `clusters` centres uniform in [0, 10)^dim, Gaussian spread 1 along
// every axis, shifted by +20 (so the data's mean is far from the origin, as SIFT's is).
inline std::vector<float> clustered_rows(size_t n, uint32_t dim, uint32_t clusters, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 10);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(size_t{clusters} * dim);
  for (float& c : centres) c = 20 + u(rng);
  std::vector<float> v(n * dim);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = rng() % clusters;
    for (uint32_t d = 0; d < dim; ++d) v[i * dim + d] = centres[k * dim + d] + g(rng);
  }
  return v;
}

inline std::vector<float> normalized(std::vector<float> v, uint32_t dim) {
  for (size_t i = 0; i < v.size() / dim; ++i) normalize(v.data() + i * dim, dim);
  return v;
}

// The ids of the k smallest values of dist (ties by id), ascending.
inline std::vector<uint32_t> smallest(const std::vector<float>& dist, size_t k) {
  std::vector<uint32_t> ids(dist.size());
  std::iota(ids.begin(), ids.end(), 0u);
  k = std::min(k, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](uint32_t a, uint32_t b) { return dist[a] < dist[b] || (dist[a] == dist[b] && a < b); });
  ids.resize(k);
  return ids;
}

// Recall@k of: estimate every code, keep the best r, re-rank them by the exact distance
// (metric's kernel), take k; against the exact top k. Averaged over the queries.
inline double rerank_recall(const Quantizer& qz, const std::vector<uint8_t>& codes, const std::vector<float>& base,
                            const std::vector<float>& queries, size_t k, size_t r) {
  const uint32_t dim = qz.dim();
  const size_t n = base.size() / dim, nq = queries.size() / dim;
  const DistanceFn exact = distance_kernel(qz.metric() == Metric::kL2 ? Metric::kL2 : Metric::kInnerProduct);
  auto state = qz.new_query();
  std::vector<float> est(n), ex(n);
  double hits = 0;
  for (size_t q = 0; q < nq; ++q) {
    const float* qv = queries.data() + q * dim;
    qz.prepare(qv, *state);
    qz.estimate(*state, codes.data(), n, est.data());
    for (size_t i = 0; i < n; ++i) ex[i] = exact(qv, base.data() + i * dim, dim);
    const std::vector<uint32_t> truth = smallest(ex, k);
    std::vector<uint32_t> cand = smallest(est, r);
    std::sort(cand.begin(), cand.end(),
              [&](uint32_t a, uint32_t b) { return ex[a] < ex[b] || (ex[a] == ex[b] && a < b); });
    cand.resize(std::min(k, cand.size()));
    for (uint32_t id : cand) hits += std::count(truth.begin(), truth.end(), id);
  }
  return hits / double(nq * k);
}

}  // namespace calico::vector::test
