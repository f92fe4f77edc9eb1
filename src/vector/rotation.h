// RandomRotation: a random orthogonal matrix P of order d (RaBitQ's rotation, Gao and Long,
// "RaBitQ: Quantizing High-Dimensional Vectors with a Theoretical Error Bound for
// Approximate Nearest Neighbor Search", SIGMOD 2024, section 3.1.3). Rotating the data and
// the queries by P keeps every distance and inner product; what it buys is that the
// rotated direction of a vector is uniform on the sphere, which the estimator's error
// bound needs.
//
// Principal entry points:
//   RandomRotation::generate(d, seed)      Gaussian d x d entries, orthonormalised
//   RandomRotation::from_matrix(m, d)      a stored matrix (model blobs), checked
//   apply(in, n, out)                      out row i = P (in row i), n rows of d floats
//
// Generation: entries N(0, 1) from a splitmix64 stream and Box-Muller in double, then
// modified Gram-Schmidt in double, run twice per row (reorthogonalisation), so the rows are
// orthonormal to about 1e-14 before rounding to float. Generating costs about 2 d^3 flops
// (d = 384: 0.1 G), applying 2 d^2 per row; a model stores the d^2 floats rather than the
// seed, since Box-Muller goes through libm, whose last bits may differ between machines.
// Rows are the Haar-distributed orthogonal matrix's up to the signs Gram-Schmidt fixes,
// which does not change the distribution of P x for a fixed x.
// Threads: const after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace calico::vector {

// Row i of the d x d row-major matrix a, made orthogonal to rows 0 .. i - 1 (assumed
// orthonormal) by modified Gram-Schmidt, twice for accuracy; returns the residual norm
// (the row is not normalised: a caller redraws a row whose norm is ~0).
double orthogonalize_row(double* a, uint32_t d, uint32_t i);

class RandomRotation {
 public:
  // Bound on d: the matrix is dense (d = 4096 is 64 MB, 1.4e11 flops to generate).
  static constexpr uint32_t kMaxDim = 4096;

  RandomRotation() = default;
  // Errors: kInvalidArgument for d = 0 or d > kMaxDim.
  static RandomRotation generate(uint32_t d, uint64_t seed);
  // m: d x d, row-major. Errors: kCorruptPage (the matrix comes from a blob) when its size
  // is not d * d or a row's norm is not 1 within 1e-3.
  static RandomRotation from_matrix(std::vector<float> m, uint32_t d);

  uint32_t dim() const { return d_; }
  const std::vector<float>& matrix() const { return p_; }

  // out[i * d .. ) = P in[i * d .. ) for i < n (one sgemm). in and out must not overlap.
  void apply(const float* in, size_t n, float* out) const;

 private:
  uint32_t d_ = 0;
  std::vector<float> p_;  // d x d, row-major; invariant: rows orthonormal (to float rounding)
};

}  // namespace calico::vector
