#include "vector/rotation.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "calico/checks.h"
#include "calico/error.h"
#include "vector/blas.h"

namespace calico::vector {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1]: 53 random bits, never 0 (Box-Muller takes its log).
double uniform_open0(uint64_t& state) { return (double(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53; }

}  // namespace

double orthogonalize_row(double* a, uint32_t d, uint32_t i) {
  double* row = a + size_t{i} * d;
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t j = 0; j < i; ++j) {
      const double* q = a + size_t{j} * d;
      double dot = 0;
      for (uint32_t k = 0; k < d; ++k) dot += row[k] * q[k];
      for (uint32_t k = 0; k < d; ++k) row[k] -= dot * q[k];
    }
  }
  double norm = 0;
  for (uint32_t k = 0; k < d; ++k) norm += row[k] * row[k];
  return std::sqrt(norm);
}

RandomRotation RandomRotation::generate(uint32_t d, uint64_t seed) {
  if (d == 0 || d > kMaxDim) {
    throw Error(ErrorCode::kInvalidArgument,
                "rotation: dim must be in [1, " + std::to_string(kMaxDim) + "], got " + std::to_string(d));
  }
  const size_t dd = size_t{d} * d;
  std::vector<double> a(dd);
  uint64_t state = seed;
  for (size_t i = 0; i < dd; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform_open0(state)));
    const double t = 2.0 * std::numbers::pi * uniform_open0(state);
    a[i] = r * std::cos(t);
    if (i + 1 < dd) a[i + 1] = r * std::sin(t);
  }
  // Modified Gram-Schmidt over the rows, twice per row. A Gaussian matrix is singular with
  // probability 0; a row left with a tiny residual is redrawn (bounded: kMaxRedraws).
  constexpr int kMaxRedraws = 16;
  for (uint32_t i = 0; i < d; ++i) {
    double* row = a.data() + size_t{i} * d;
    for (int attempt = 0;; ++attempt) {
      const double norm = orthogonalize_row(a.data(), d, i);
      if (norm > 1e-6) {
        for (uint32_t k = 0; k < d; ++k) row[k] /= norm;
        break;
      }
      CALICO_CHECK(attempt < kMaxRedraws);  // probability 0 for a correct generator
      for (uint32_t k = 0; k < d; ++k) {
        row[k] = std::sqrt(-2.0 * std::log(uniform_open0(state))) * std::cos(2.0 * std::numbers::pi * uniform_open0(state));
      }
    }
  }
  RandomRotation r;
  r.d_ = d;
  r.p_.assign(a.begin(), a.end());
  return r;
}

RandomRotation RandomRotation::from_matrix(std::vector<float> m, uint32_t d) {
  if (d == 0 || d > kMaxDim || m.size() != size_t{d} * d) {
    throw Error(ErrorCode::kCorruptPage, "model blob: rotation of order " + std::to_string(d) + " with " +
                                             std::to_string(m.size()) + " entries");
  }
  for (uint32_t i = 0; i < d; ++i) {
    double norm = 0;
    for (uint32_t k = 0; k < d; ++k) norm += double{m[size_t{i} * d + k]} * m[size_t{i} * d + k];
    if (!(std::abs(norm - 1.0) < 1e-3)) {
      throw Error(ErrorCode::kCorruptPage, "model blob: rotation row " + std::to_string(i) + " is not unit length");
    }
  }
  RandomRotation r;
  r.d_ = d;
  r.p_ = std::move(m);
  return r;
}

void RandomRotation::apply(const float* in, size_t n, float* out) const {
  CALICO_DCHECK(d_ > 0 && p_.size() == size_t{d_} * d_);
  if (n == 0) return;
  blas_single_threaded();
  const int d = static_cast<int>(d_);
  if (n == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0f, p_.data(), d, in, 1, 0.0f, out, 1);
    return;
  }
  // Rows of `in` are at most INT_MAX per call (BLAS takes int sizes).
  constexpr size_t kMaxRowsPerCall = size_t{1} << 20;
  for (size_t done = 0; done < n; done += kMaxRowsPerCall) {
    const int rows = static_cast<int>(std::min(kMaxRowsPerCall, n - done));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, d, d, 1.0f, in + done * d_, d, p_.data(), d, 0.0f,
                out + done * d_, d);
  }
}

}  // namespace calico::vector
