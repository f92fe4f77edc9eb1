#include "vector/distance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "calico/error.h"
#include "vector/simd_kernels.h"

namespace calico::vector {
namespace {

// (metric, level) for l2 and ip and every instruction-set level this CPU runs.
std::vector<std::pair<Metric, SimdLevel>> every_metric_and_level() {
  std::vector<std::pair<Metric, SimdLevel>> all;
  for (Metric m : {Metric::kL2, Metric::kInnerProduct}) {
    for (SimdLevel level : supported_simd_levels()) all.emplace_back(m, level);
  }
  return all;
}

// The kernels of every level agree with the scalar reference on every length from 1 to 300
// (every tail shape of the 8-, 16- and 32-wide loops); the dispatched one is the best level.
TEST(Distance, KernelsMatchScalarOnEveryTail) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 1);
  for (size_t dim = 1; dim <= 300; ++dim) {
    std::vector<float> a(dim), b(dim);
    for (size_t i = 0; i < dim; ++i) a[i] = g(rng), b[i] = g(rng);
    for (const auto& [m, level] : every_metric_and_level()) {
      const float want = m == Metric::kL2 ? l2_scalar(a.data(), b.data(), dim) : ip_scalar(a.data(), b.data(), dim);
      EXPECT_NEAR(distance_kernel_at(m, level)(a.data(), b.data(), dim), want, 1e-4f * (1 + std::abs(want)))
          << metric_name(m) << " " << simd_level_name(level) << " dim " << dim;
    }
  }
  if (std::getenv("CALICO_SIMD") == nullptr) {
    const SimdLevel best = supported_simd_levels().back();
    EXPECT_EQ(simd_level(), simd_level_name(best));
    EXPECT_EQ(distance_kernel(Metric::kL2), distance_kernel_at(Metric::kL2, best));
    EXPECT_EQ(distance_many_kernel(Metric::kInnerProduct), distance_many_kernel_at(Metric::kInnerProduct, best));
    EXPECT_EQ(distance_gather_kernel(Metric::kL2), distance_gather_kernel_at(Metric::kL2, best));
  }
}

TEST(Distance, KnownValues) {
  const float a[3] = {1, 2, 3}, b[3] = {4, 6, 3};
  EXPECT_FLOAT_EQ(distance_kernel(Metric::kL2)(a, b, 3), 25.0f);
  EXPECT_FLOAT_EQ(distance_kernel(Metric::kInnerProduct)(a, b, 3), 1.0f - 25.0f);
  EXPECT_FLOAT_EQ(distance_kernel(Metric::kL2)(a, a, 3), 0.0f);
}

TEST(Distance, NormalizeAndFinite) {
  float v[2] = {3, 4};
  ASSERT_TRUE(normalize(v, 2));
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  EXPECT_NEAR(distance_kernel(Metric::kCosine)(v, v, 2), 0.0f, 1e-6f);
  float z[2] = {0, 0};
  EXPECT_FALSE(normalize(z, 2));
  EXPECT_TRUE(all_finite(v, 2));
  float n[2] = {1, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_FALSE(all_finite(n, 2));
  float inf[1] = {std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(all_finite(inf, 1));
}

TEST(Distance, ParseMetric) {
  EXPECT_EQ(parse_metric("l2"), Metric::kL2);
  EXPECT_EQ(parse_metric("ip"), Metric::kInnerProduct);
  EXPECT_EQ(parse_metric("cosine"), Metric::kCosine);
  EXPECT_THROW(parse_metric("hamming"), Error);
  EXPECT_FALSE(simd_level().empty());
}

// The lengths the bit-identity tests below cover: every length up to 70 (every tail of the
// 8-, 16- and 32-wide loops) and the usual ones.
std::vector<size_t> bit_identity_dims() {
  std::vector<size_t> dims;
  for (size_t d = 1; d <= 70; ++d) dims.push_back(d);
  for (size_t d : {96, 100, 128, 384, 768}) dims.push_back(d);
  return dims;
}

// out[i] is one(a, rows[i], dim) bit for bit for every i < rows.size(), and out[rows.size()]
// still holds the -7 it was filled with (nothing written past n).
void expect_bit_identical(DistanceFn one, const float* a, const std::vector<const float*>& rows, size_t dim,
                          const std::vector<float>& out, const std::string& context) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const float want = one(a, rows[i], dim);
    ASSERT_EQ(std::memcmp(&out[i], &want, 4), 0)
        << context << " dim " << dim << " n " << rows.size() << " row " << i << ": " << out[i] << " vs " << want;
  }
  ASSERT_EQ(out[rows.size()], -7.0f) << context << ": wrote past n";
}

std::string kernel_name(Metric m, SimdLevel level) {
  return "metric " + std::string(metric_name(m)) + " (" + std::string(simd_level_name(level)) + ")";
}

// The many-vector kernels equal the one-vector kernel of their level bit for bit (the IVF
// scans score a page with one call and must rank exactly as the reference), at every level
// this CPU runs (distance_kernel() uses only the best), for every count of vectors (full
// groups of four and every remainder), strides with an id word between rows (as on a
// posting page) and without.
TEST(Distance, ManyKernelIsBitIdenticalToOneVectorKernel) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0, 3);
  for (const auto& [m, level] : every_metric_and_level()) {
    const DistanceFn one = distance_kernel_at(m, level);
    const DistanceManyFn many = distance_many_kernel_at(m, level);
    for (size_t dim : bit_identity_dims()) {
      std::vector<float> a(dim);
      for (float& x : a) x = g(rng);
      for (size_t stride : {dim, dim + 1}) {
        for (size_t n = 0; n <= 9; ++n) {
          std::vector<float> b(n * stride + 1);
          for (float& x : b) x = g(rng);
          std::vector<const float*> rows(n);
          for (size_t i = 0; i < n; ++i) rows[i] = b.data() + 1 + i * stride;
          std::vector<float> out(n + 1, -7.0f);
          many(a.data(), b.data() + 1, stride, n, dim, out.data());
          ASSERT_NO_FATAL_FAILURE(expect_bit_identical(
              one, a.data(), rows, dim, out, kernel_name(m, level) + " stride " + std::to_string(stride)));
        }
      }
    }
  }
}

// The gather kernels too (HNSW scores a node's neighbours, each vector on its own page,
// and must rank exactly as the one-vector kernel it uses elsewhere): vectors in separate
// allocations at any alignment, the same vector twice in a group, every count up to 9.
TEST(Distance, GatherKernelIsBitIdenticalToOneVectorKernel) {
  std::mt19937 rng(12);
  std::normal_distribution<float> g(0, 3);
  for (const auto& [m, level] : every_metric_and_level()) {
    const DistanceFn one = distance_kernel_at(m, level);
    const DistanceGatherFn gather = distance_gather_kernel_at(m, level);
    for (size_t dim : bit_identity_dims()) {
      std::vector<float> a(dim);
      for (float& x : a) x = g(rng);
      for (size_t n = 0; n <= 9; ++n) {
        std::vector<std::vector<float>> storage(n, std::vector<float>(dim + 3));
        std::vector<const float*> rows(n);
        for (size_t i = 0; i < n; ++i) {
          for (float& x : storage[i]) x = g(rng);
          rows[i] = storage[i].data() + i % 4;  // 0, 4, 8 or 12 bytes past the allocation's alignment
        }
        if (n >= 3) rows[2] = rows[0];
        std::vector<float> out(n + 1, -7.0f);
        gather(a.data(), rows.data(), n, dim, out.data());
        ASSERT_NO_FATAL_FAILURE(expect_bit_identical(one, a.data(), rows, dim, out, kernel_name(m, level)));
      }
    }
  }
}

}  // namespace
}  // namespace calico::vector
