// PqQuantizer: product quantisation with asymmetric distance computation (Jegou, Douze and
// Schmid, "Product Quantization for Nearest Neighbor Search", IEEE TPAMI 2011), the
// comparison point for RaBitQ (vector/rabitq.h).
//
// Principal entry points (the Quantizer interface, vector/quantizer.h):
//   PqQuantizer::train(sample, n, dim, params)   k-means (vector/kmeans.h, L2) of each of
//                                                m subspaces: consecutive runs of dim / m
//                                                dimensions, the first dim % m of them one
//                                                longer (m need not divide dim)
//   encode: per subspace the nearest of its 2^bits centroids (L2), one byte each
//   prepare: the m x 2^bits lookup table of the query's subvector against every centroid
//   estimate: out[i] = constant + sum_j table[j][code_i[j]]
//
// The estimate is the exact distance from q to the reconstruction x^ of the row (the
// concatenated centroids): kL2 sum_j |q_j - c_j|^2; kInnerProduct 1 - <q, x^> (the table
// holds the kernel's 1 - <q_j, c_j>, the constant subtracts m - 1); kCosine |q - x^|^2 / 2,
// which equals 1 - <q, x> for unit x^ = x and, unlike 1 - <q, x^>, has an error that
// shrinks with |q - x| (2 <x - q, x^ - x> + |x^ - x|^2, not <q, x^ - x>): on embedding-like
// data, whose vectors share a common direction, the inner-product table ranks near
// neighbours barely better than chance (measured on the tests' unit clustered data: recall@10
// 0.035 against 0.51 with the cosine table, pq24x8, R = 10). It is biased (no bound);
// recall is what it is measured by.
// Code layout (code_bytes() = m): byte j = the centroid of subspace j (8-bit codes, also
// when bits < 8).
// Limits: 1 <= m <= dim; bits in [1, 8]; the sample holds at least 2^bits rows.
// Centroids: subspace j's 2^bits centroids of width(j) floats each start at float
// 2^bits * offset(j), so the whole table is 2^bits * dim floats for any m (and, for m
// dividing dim, the layout of equal subspaces).
// Threads: const after train() / deserialize(); one state per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vector/quantizer.h"

namespace calico::vector {

struct PqParams {
  uint32_t m = 0;     // subspaces (code bytes), 1 .. dim
  uint32_t bits = 8;  // 2^bits centroids per subspace, 1 .. 8
  Metric metric = Metric::kL2;
  uint32_t iters = 10;   // Lloyd iterations per subspace
  uint64_t seed = 42;
  uint32_t threads = 0;  // k-means threads (KmeansParams::threads)
};

class PqQuantizer final : public Quantizer {
 public:
  // Errors: kInvalidArgument naming the parameter: dim (0), m (0 or above dim), bits
  // (not in [1, 8]), the sample (empty, fewer rows than 2^bits, a row not finite).
  static PqQuantizer train(const float* sample, uint64_t n, uint32_t dim, const PqParams& params);
  // Errors: kCorruptPage (model_blob.h).
  static PqQuantizer deserialize(const uint8_t* bytes, size_t n);

  std::string name() const override { return "pq" + std::to_string(m_) + "x" + std::to_string(bits_); }
  uint32_t dim() const override { return dim_; }
  Metric metric() const override { return metric_; }
  size_t code_bytes() const override { return m_; }
  void encode(const float* rows, size_t n, uint8_t* codes) const override;
  std::unique_ptr<QueryState> new_query() const override;
  void prepare(const float* q, QueryState& state) const override;
  void estimate(const QueryState& state, const uint8_t* codes, size_t n, float* out) const override;
  std::vector<uint8_t> serialize() const override;

  uint32_t subspaces() const { return m_; }
  uint32_t centroids_per_subspace() const { return ksub_; }

 private:
  PqQuantizer(uint32_t dim, uint32_t m, uint32_t bits, Metric metric, std::vector<float> centroids);

  // Subspace j: dimensions [offset(j), offset(j) + width(j)).
  uint32_t width(uint32_t j) const { return dsub_ + (j < wide_ ? 1 : 0); }
  uint32_t offset(uint32_t j) const { return j * dsub_ + (j < wide_ ? j : wide_); }

  uint32_t dim_ = 0, m_ = 0, bits_ = 8, ksub_ = 256;
  uint32_t dsub_ = 0;  // dim / m
  uint32_t wide_ = 0;  // dim % m: the subspaces one dimension wider, the first ones
  Metric metric_ = Metric::kL2;
  std::vector<float> centroids_;  // ksub x dim floats, by subspace (above); invariant: finite
};

}  // namespace calico::vector
