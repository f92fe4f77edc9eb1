// CoarseRanker: rank() and rank_block() (BLAS sgemm, then the kernel near the cut) both
// return exactly the nprobe smallest (kernel distance, list) pairs, on random centroids,
// on centroids with exact and one-ulp near ties (where the product's rounding alone would
// pick other lists), with large norms (the bound is not finite: the kernel for all), for
// L2 and inner product, blocks above kBlockQueries and every nprobe shape.
#include "vector/coarse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace calico::vector {
namespace {

// The reference: every centroid through the one-vector kernel, sorted.
std::vector<Neighbor> reference(const float* q, const std::vector<float>& c, uint32_t k, uint32_t dim, Metric m,
                                uint32_t nprobe) {
  const DistanceFn fn = distance_kernel(m);
  std::vector<Neighbor> all(k);
  for (uint32_t l = 0; l < k; ++l) all[l] = {fn(q, c.data() + size_t{l} * dim, dim), l};
  std::sort(all.begin(), all.end());
  all.resize(nprobe);
  return all;
}

void expect_exact(const std::vector<float>& c, uint32_t k, uint32_t dim, Metric m, const std::vector<float>& qs,
                  const char* what) {
  const CoarseRanker r(c.data(), k, dim, m);
  const size_t nq = qs.size() / dim;
  CoarseRanker::Scratch s;
  for (uint32_t nprobe : {1u, 2u, 7u, k / 2, k}) {
    if (nprobe == 0) continue;
    std::vector<Neighbor> block(nq * nprobe), one(nprobe);
    r.rank_block(qs.data(), nq, nprobe, s, block.data());
    for (size_t i = 0; i < nq; ++i) {
      const auto want = reference(qs.data() + i * dim, c, k, dim, m, nprobe);
      r.rank(qs.data() + i * dim, nprobe, s, one.data());
      ASSERT_EQ(one, want) << what << ": rank, query " << i << " nprobe " << nprobe;
      const std::vector<Neighbor> got(block.begin() + i * nprobe, block.begin() + (i + 1) * nprobe);
      ASSERT_EQ(got, want) << what << ": rank_block, query " << i << " nprobe " << nprobe << " metric "
                           << metric_name(m);
    }
  }
}

std::vector<float> gaussian(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

TEST(CoarseRanker, RankBlockEqualsKernelRankingOnRandomData) {
  std::mt19937 rng(3);
  for (Metric m : {Metric::kL2, Metric::kInnerProduct}) {
    for (uint32_t dim : {5u, 37u, 128u}) {
      const uint32_t k = 300;
      const auto c = gaussian(size_t{k} * dim, rng, 10);
      const auto qs = gaussian(size_t{CoarseRanker::kBlockQueries * 2 + 5} * dim, rng, 10);
      expect_exact(c, k, dim, m, qs, "random");
    }
  }
}

// Centroids in groups: an exact copy and copies one ulp apart in one coordinate, around
// a large common offset (so that |q|^2 + |c|^2 - 2 q.c loses the low bits), with queries
// near them: the nprobe cut falls between near-equal distances, where only the kernel
// decides. (Ranking by the product alone fails here.)
TEST(CoarseRanker, RankBlockIsExactOnNearTies) {
  std::mt19937 rng(9);
  for (Metric m : {Metric::kL2, Metric::kInnerProduct}) {
    const uint32_t dim = 48, groups = 40, per = 5, k = groups * per;
    std::vector<float> c;
    const auto base = gaussian(size_t{groups} * dim, rng, 1);
    for (uint32_t gi = 0; gi < groups; ++gi) {
      for (uint32_t j = 0; j < per; ++j) {
        for (uint32_t i = 0; i < dim; ++i) {
          float x = 1000.0f + base[gi * dim + i];
          if (j >= 2 && i == j) x = std::nextafter(x, 2000.0f);
          if (j == 4) x = std::nextafter(x, 0.0f);
          c.push_back(x);
        }
      }
    }
    std::vector<float> qs;
    for (uint32_t q = 0; q < 70; ++q) {
      const uint32_t gi = q % groups;
      for (uint32_t i = 0; i < dim; ++i) qs.push_back(c[size_t{gi * per} * dim + i] + (q % 3 == 0 ? 0.0f : 0.01f));
    }
    expect_exact(c, k, dim, m, qs, "near ties");
  }
}

// Norms near 1e18: the error bound is not finite and every centroid goes through the
// kernel (the approximations would overflow).
TEST(CoarseRanker, HugeNormsFallBackToTheKernel) {
  std::mt19937 rng(5);
  const uint32_t dim = 8, k = 50;
  auto c = gaussian(size_t{k} * dim, rng, 1);
  for (float& x : c) x *= 1e18f;
  auto qs = gaussian(size_t{20} * dim, rng, 1);
  for (float& x : qs) x *= 1e18f;
  expect_exact(c, k, dim, Metric::kL2, qs, "huge norms");
}

}  // namespace
}  // namespace calico::vector
