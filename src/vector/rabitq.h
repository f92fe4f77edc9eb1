// RabitqQuantizer: RaBitQ codes with an unbiased distance estimator and its error bound.
//   Gao and Long, "RaBitQ: Quantizing High-Dimensional Vectors with a Theoretical Error
//   Bound for Approximate Nearest Neighbor Search", SIGMOD 2024 (1-bit codes);
//   Gao, Gou, Xu, Yang, Long and Wong, "Practical and Asymptotically Optimal Quantization of
//   High-Dimensional Vectors in Euclidean Space for Approximate Nearest Neighbor Search",
//   SIGMOD 2025 (extended RaBitQ: B bits per dimension).
//
// Principal entry points (the Quantizer interface, vector/quantizer.h, plus):
//   RabitqQuantizer::train(sample, n, dim, params)   the sample's mean c0, K centroids c_k
//                                                    (k-means; K = 1: c_1 = c0) and a random
//                                                    rotation P (vector/rotation.h)
//   estimate_bounds(state, codes, n, dist, err)      estimates and their error bounds
//
// The model. D = dim rounded up to a multiple of 64 (vectors are zero-padded; P is D x D).
// A row x is coded relative to its nearest centroid c_k (as the paper's IVF does; the
// estimator's error scales with |r|, so K > 1 shrinks it on clustered data):
// r = x - c_k, o' = P r / |r| (a unit vector). Its code is a point of the grid
// G_B = {-(2^B - 1) / 2, ..., (2^B - 1) / 2}^D (B = 1: {-1/2, 1/2}^D, the signs of o'),
// stored as unsigned values u_d = y_d + (2^B - 1) / 2 in B bits; y is the grid point whose
// direction is closest to o' (largest <y, o'> / |y|): for B = 1 the signs; for B > 1 found
// exactly by the 2025 paper's sweep over the critical scaling factors (the magnitude of y_d is
// floor(t |o'_d|) + 1/2, clipped, for the best t). Per row the code keeps three floats and,
// when K > 1, k in one byte:
//   add     = |r|^2 + 2 <r, c_k - c0> (kL2), -<r, c0> (kInnerProduct, kCosine)
//   rescale = -2 g (kL2), -g (ip),       g = |r| / <y, o'>
//   err     = kappa |r| sqrt(1 - cos^2) / cos / sqrt(D - 1),   cos = <y, o'> / |y|,
//             kappa = 2 (kL2) or 1 (ip)
// The estimator. For a query q, s = q - c0 (one rotation per query, whatever k), s' = P s:
//   <r, s> ~ g <y, s'>   i.e.  <o, s_unit> ~ <y_unit, s_unit'> / <y_unit, o'>
// which is unbiased over the random P (2024 paper, Lemma 3.2 / Theorem 3.2), so with the
// per-query table T[k] = |q - c_k|^2 (kL2) or 1 - <c_k, q> (ip) of K entries:
//   kL2:  |x - q|^2  = |r|^2 + |q - c_k|^2 + 2 <r, c_k - c0> - 2 <r, s>  ~ add + T[k] + rescale <y, s'>
//   ip:   1 - <x, q> = 1 - <c_k, q> - <r, c0> - <r, s>                   ~ add + T[k] + rescale <y, s'>
// The error bound (2024 paper, Theorem 3.2, and the same argument for any codeword): with
// probability at least 1 - 2 exp(-c0 eps0^2),
//   |estimate - distance| <= eps0 |s| err,
// and the paper's eps0 = 1.9 (kBoundEpsilon) makes a violation rare (measured by the tests).
// <y, s'> is computed on a quantised query: B = 1: s' to 4-bit unsigned values with
// randomised rounding (the paper's B_q = 4), <y, s'> from bit-plane popcounts; B > 1: s' to
// int8 in [-127, 127] (randomised rounding), <y, s'> from an int8 x uint dot product.
// Randomised rounding keeps the estimator unbiased; its seed is derived from the model's seed
// and the query's bytes, so a query always gets the same state.
//
// Code layout (code_bytes() = D * B / 8 + 12, + 1 when K > 1): [B-bit values,
// rabitq_kernels.h's layout][add f32][rescale f32][err f32][k u8 when K > 1]. Factors are
// unaligned (read with memcpy).
// Limits: dim <= RandomRotation::kMaxDim (4096); bits in {1, 2, 4}; K in [1, 256].
// Threads: const after train() / deserialize(); one state per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vector/quantizer.h"
#include "vector/rabitq_kernels.h"
#include "vector/rotation.h"

namespace calico::vector {

struct RabitqParams {
  uint32_t bits = 1;  // bits per dimension: 1, 2 or 4
  Metric metric = Metric::kL2;
  uint64_t seed = 42;  // the rotation, k-means and the queries' randomised rounding
  uint32_t clusters = 1;  // K centroids, 1 .. kMaxClusters (1: the sample's mean only)
  uint32_t kmeans_iters = 10;
  uint32_t threads = 0;  // k-means threads (KmeansParams::threads)
};

class RabitqQuantizer final : public Quantizer {
 public:
  static constexpr float kBoundEpsilon = 1.9f;  // eps0 of the 2024 paper's experiments
  static constexpr size_t kFactorBytes = 12;
  static constexpr uint32_t kMaxClusters = 256;  // the centroid id is one byte

  // Trains on sample[0 .. n * dim): c0 is the sample's mean, c_k its k-means centroids (of
  // the normalised rows under kCosine). Errors: kInvalidArgument naming the parameter: dim
  // (0 or > 4096), bits (not 1, 2 or 4), clusters (0, > 256 or > n), the sample (empty, or a
  // row not finite).
  static RabitqQuantizer train(const float* sample, uint64_t n, uint32_t dim, const RabitqParams& params);
  // Errors: kCorruptPage (model_blob.h).
  static RabitqQuantizer deserialize(const uint8_t* bytes, size_t n);

  std::string name() const override {
    return "rabitq" + std::to_string(bits_) + (clusters_ > 1 ? "c" + std::to_string(clusters_) : "");
  }
  uint32_t dim() const override { return dim_; }
  Metric metric() const override { return metric_; }
  size_t code_bytes() const override { return size_t{padded_} * bits_ / 8 + kFactorBytes + (clusters_ > 1 ? 1 : 0); }
  void encode(const float* rows, size_t n, uint8_t* codes) const override;
  std::unique_ptr<QueryState> new_query() const override;
  void prepare(const float* q, QueryState& state) const override;
  void estimate(const QueryState& state, const uint8_t* codes, size_t n, float* out) const override;
  std::vector<uint8_t> serialize() const override;

  // estimate(), and err[i] = epsilon |s| err_i: |dist[i] - exact| <= err[i] but with a
  // probability the header states. The error is close to Gaussian with standard deviation
  // |s| err_i (measured: 5.5-6.5% of pairs exceed the paper's eps0 = 1.9, under 0.5% exceed 3).
  void estimate_bounds(const QueryState& state, const uint8_t* codes, size_t n, float* dist, float* err,
                       float epsilon = kBoundEpsilon) const;

  uint32_t bits() const { return bits_; }
  uint32_t padded_dim() const { return padded_; }
  uint32_t clusters() const { return clusters_; }
  const std::vector<float>& centroid() const { return centroid_; }

 private:
  RabitqQuantizer(uint32_t dim, uint32_t bits, Metric metric, uint64_t seed, std::vector<float> centroid,
                  std::vector<float> centroids, uint32_t clusters, RandomRotation rotation);
  // Encodes one rotated residual (rot, |r| = norm, the metric's part of `add` = extra, the
  // centroid k) into code.
  void encode_one(const float* rot, double norm, double extra, uint32_t k, uint8_t* code,
                  std::vector<uint8_t>& values, std::vector<uint32_t>& events) const;
  template <bool kBounds>
  void estimate_impl(const QueryState& state, const uint8_t* codes, size_t n, float* dist, float* err,
                     float epsilon) const;

  uint32_t dim_ = 0, padded_ = 0, bits_ = 1, clusters_ = 1;
  Metric metric_ = Metric::kL2;
  uint64_t seed_ = 0;
  std::vector<float> centroid_;   // c0: dim_ floats
  std::vector<float> centroids_;  // c_k: clusters_ x dim_ floats (clusters_ = 1: c0)
  RandomRotation rotation_;      // padded_ x padded_
  BinaryDotFn binary_dot_ = nullptr;
  PackedDotFn packed_dot_ = nullptr;
};

}  // namespace calico::vector
