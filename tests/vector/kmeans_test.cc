// k-means: planted, well-separated clusters are recovered exactly (L2 and cosine); results
// are deterministic for a seed and independent of the thread count; k == n, repeated rows
// and empty-cluster repair; assign_nearest against a brute-force loop; bad input.
#include "vector/kmeans.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "calico/error.h"
#include "support/test_util.h"

namespace calico::vector {
namespace {

using testing::expect_error;

struct Planted {
  std::vector<float> rows;     // n x dim
  std::vector<uint32_t> label;  // the planted cluster of each row
  std::vector<float> centers;  // clusters x dim
};

// `clusters` centres uniform in [-100, 100]^dim, `per` rows around each with Gaussian noise
// of deviation 1 (far smaller than the distance between centres), rows shuffled.
Planted planted(uint32_t clusters, uint32_t per, uint32_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-100, 100);
  std::normal_distribution<float> noise(0, 1);
  Planted p;
  p.centers.resize(size_t{clusters} * dim);
  for (float& c : p.centers) c = u(rng);
  std::vector<uint32_t> order(size_t{clusters} * per);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i / per);
  std::shuffle(order.begin(), order.end(), rng);
  for (uint32_t c : order) {
    p.label.push_back(c);
    for (uint32_t d = 0; d < dim; ++d) p.rows.push_back(p.centers[size_t{c} * dim + d] + noise(rng));
  }
  return p;
}

// Expects the clustering to be the planted partition: a bijection between planted
// clusters and centroids, and every centroid within `tol` (L2) of its cluster's centre.
void expect_recovered(const Planted& p, const KmeansResult& r, uint32_t dim, float tol) {
  std::map<uint32_t, uint32_t> to_centroid;
  std::set<uint32_t> used;
  for (size_t i = 0; i < p.label.size(); ++i) {
    auto [it, fresh] = to_centroid.emplace(p.label[i], r.assignment[i]);
    ASSERT_EQ(it->second, r.assignment[i]) << "planted cluster " << p.label[i] << " split (row " << i << ")";
    if (fresh) {
      ASSERT_TRUE(used.insert(r.assignment[i]).second) << "two planted clusters merged";
    }
  }
  for (auto [label, c] : to_centroid) {
    float d = std::sqrt(l2_scalar(&p.centers[size_t{label} * dim], &r.centroids[size_t{c} * dim], dim));
    EXPECT_LT(d, tol) << "cluster " << label;
  }
}

TEST(Kmeans, RecoversPlantedClustersExactly) {
  const uint32_t dim = 16;
  for (uint64_t seed : {1u, 2u, 3u}) {
    Planted p = planted(12, 150, dim, seed);
    KmeansParams kp;
    kp.k = 12;
    kp.seed = seed;
    kp.threads = 2;
    for (KmeansInit init : {KmeansInit::kAuto, KmeansInit::kPlusPlus}) {
      kp.init = init;
      KmeansResult r = kmeans(p.rows.data(), p.label.size(), dim, kp);
      EXPECT_TRUE(r.plus_plus);
      ASSERT_EQ(r.centroids.size(), size_t{12} * dim);
      expect_recovered(p, r, dim, 0.5f);
      for (uint64_t s : r.sizes) EXPECT_EQ(s, 150u);
    }
  }
}

// Cosine: planted directions (unit rows), centroids stay unit length.
TEST(Kmeans, RecoversPlantedDirectionsWithCosine) {
  const uint32_t dim = 24;
  Planted p = planted(6, 100, dim, 9);
  const size_t n = p.label.size();
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(normalize(&p.rows[i * dim], dim));
  for (uint32_t c = 0; c < 6; ++c) ASSERT_TRUE(normalize(&p.centers[size_t{c} * dim], dim));
  KmeansParams kp;
  kp.k = 6;
  kp.metric = Metric::kCosine;
  KmeansResult r = kmeans(p.rows.data(), n, dim, kp);
  expect_recovered(p, r, dim, 0.1f);
  for (uint32_t c = 0; c < 6; ++c) {
    EXPECT_NEAR(ip_scalar(&r.centroids[size_t{c} * dim], &r.centroids[size_t{c} * dim], dim), 0.0f, 1e-5f);
  }
}

TEST(Kmeans, DeterministicForASeedAndAnyThreadCount) {
  const uint32_t dim = 20;
  Planted p = planted(30, 100, dim, 4);  // 3,000 rows: several threads really run
  for (KmeansInit init : {KmeansInit::kPlusPlus, KmeansInit::kRandom}) {
    KmeansParams kp;
    kp.k = 40;  // not the planted count: the result depends on the initialisation
    kp.seed = 77;
    kp.init = init;
    kp.threads = 1;
    KmeansResult a = kmeans(p.rows.data(), p.label.size(), dim, kp);
    kp.threads = 3;
    KmeansResult b = kmeans(p.rows.data(), p.label.size(), dim, kp);
    kp.threads = 1;
    KmeansResult c = kmeans(p.rows.data(), p.label.size(), dim, kp);
    EXPECT_EQ(a.centroids, b.centroids);
    EXPECT_EQ(a.centroids, c.centroids);
    EXPECT_EQ(a.assignment, b.assignment);
    EXPECT_EQ(a.objective, b.objective);
    kp.seed = 78;
    KmeansResult d = kmeans(p.rows.data(), p.label.size(), dim, kp);
    EXPECT_NE(a.centroids, d.centroids) << "another seed, other centroids";
  }
}

TEST(Kmeans, KEqualsNPutsEveryRowInItsOwnCluster) {
  const uint32_t dim = 8;
  Planted p = planted(50, 1, dim, 5);
  for (KmeansInit init : {KmeansInit::kPlusPlus, KmeansInit::kRandom}) {
    KmeansParams kp;
    kp.k = 50;
    kp.init = init;
    KmeansResult r = kmeans(p.rows.data(), 50, dim, kp);
    EXPECT_EQ(std::set<uint32_t>(r.assignment.begin(), r.assignment.end()).size(), 50u);
    for (uint64_t s : r.sizes) EXPECT_EQ(s, 1u);
    EXPECT_EQ(r.objective, 0.0);
  }
}

TEST(Kmeans, RepeatedRows) {
  const uint32_t dim = 4;
  // One point 100 times: every centroid is that point; sizes still sum to n.
  std::vector<float> same(100 * dim);
  for (size_t i = 0; i < same.size(); ++i) same[i] = float(i % dim) - 1.5f;
  for (KmeansInit init : {KmeansInit::kPlusPlus, KmeansInit::kRandom}) {
    KmeansParams kp;
    kp.k = 5;
    kp.init = init;
    KmeansResult r = kmeans(same.data(), 100, dim, kp);
    uint64_t total = 0;
    for (uint64_t s : r.sizes) total += s;
    EXPECT_EQ(total, 100u);
    EXPECT_EQ(r.objective, 0.0);
    for (uint32_t c = 0; c < 5; ++c) {
      for (uint32_t d = 0; d < dim; ++d) EXPECT_EQ(r.centroids[c * dim + d], same[d]);
    }
  }
  // Three points, each repeated 30 times, k = 3: found exactly.
  std::vector<float> three;
  std::vector<uint32_t> label;
  for (uint32_t i = 0; i < 90; ++i) {
    label.push_back(i % 3);
    for (uint32_t d = 0; d < dim; ++d) three.push_back(float((i % 3) * 10 + d));
  }
  KmeansParams kp;
  kp.k = 3;
  KmeansResult r = kmeans(three.data(), 90, dim, kp);
  EXPECT_EQ(r.objective, 0.0);
  for (uint64_t s : r.sizes) EXPECT_EQ(s, 30u);
  for (uint32_t i = 3; i < 90; ++i) EXPECT_EQ(r.assignment[i], r.assignment[i % 3]);
}

// Random initialisation on data where most rows repeat one point: initial centroids often
// coincide, leaving clusters empty; repair splits the largest, so every cluster ends with rows.
TEST(Kmeans, EmptyClustersAreRepairedBySplittingTheLargest) {
  const uint32_t dim = 4;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> noise(0, 1);
  std::vector<float> rows;
  for (int i = 0; i < 90; ++i) rows.insert(rows.end(), {0, 0, 0, 0});
  for (int i = 0; i < 10; ++i) {
    for (uint32_t d = 0; d < dim; ++d) rows.push_back(100 + 10 * noise(rng));
  }
  uint32_t repairs = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    KmeansParams kp;
    kp.k = 3;
    kp.seed = seed;
    kp.init = KmeansInit::kRandom;
    KmeansResult r = kmeans(rows.data(), 100, dim, kp);
    repairs += r.empty_repairs;
    for (uint64_t s : r.sizes) EXPECT_GT(s, 0u) << "seed " << seed;
  }
  EXPECT_GT(repairs, 0u);
}

TEST(Kmeans, AssignNearestMatchesBruteForceWithLowestIndexOnTies) {
  const uint32_t dim = 12, k = 9;
  Planted p = planted(k, 300, dim, 6);
  std::vector<float> centroids(p.centers);
  // A duplicated centroid: rows nearest to it must go to the lower index.
  std::copy_n(&centroids[2 * dim], dim, &centroids[7 * dim]);
  const uint64_t n = p.label.size();
  std::vector<uint32_t> got(n);
  std::vector<float> dist(n);
  assign_nearest(p.rows.data(), n, dim, centroids.data(), k, Metric::kL2, 2, got.data(), dist.data());
  const DistanceFn fn = distance_kernel(Metric::kL2);
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t best = 0;
    for (uint32_t c = 1; c < k; ++c) {
      if (fn(&p.rows[i * dim], &centroids[c * dim], dim) < fn(&p.rows[i * dim], &centroids[best * dim], dim)) best = c;
    }
    ASSERT_EQ(got[i], best) << "row " << i;
    ASSERT_NE(got[i], 7u);
    ASSERT_EQ(dist[i], fn(&p.rows[i * dim], &centroids[best * dim], dim));
  }
}

TEST(Kmeans, BadInputIsRejected) {
  std::vector<float> rows(40, 1.0f);
  KmeansParams kp;
  kp.k = 2;
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 10, 0, kp); });
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 0, 4, kp); });
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(nullptr, 10, 4, kp); });
  kp.k = 0;
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 10, 4, kp); });
  kp.k = 11;
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 10, 4, kp); });
  kp.k = 2;
  rows[17] = std::numeric_limits<float>::quiet_NaN();
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 10, 4, kp); });
  rows[17] = std::numeric_limits<float>::infinity();
  expect_error(ErrorCode::kInvalidArgument, [&] { kmeans(rows.data(), 10, 4, kp); });
}

}  // namespace
}  // namespace calico::vector
