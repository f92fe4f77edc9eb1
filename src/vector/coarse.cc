#include "vector/coarse.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "calico/checks.h"
#include "vector/blas.h"

namespace calico::vector {

namespace {

double norm(const float* v, uint32_t dim) {
  double s = 0;
  for (uint32_t i = 0; i < dim; ++i) s += double{v[i]} * v[i];
  return std::sqrt(s);
}

}  // namespace

CoarseRanker::CoarseRanker(const float* centroids, uint32_t k, uint32_t dim, Metric metric)
    : centroids_(centroids),
      k_(k),
      dim_(dim),
      metric_(metric),
      one_(distance_kernel(metric)),
      many_(distance_many_kernel(metric)),
      sq_norms_(k) {
  CALICO_CHECK(centroids != nullptr && k >= 1 && dim >= 1);
  for (uint32_t l = 0; l < k; ++l) {
    const float* c = centroids + size_t{l} * dim;
    float s = 0;
    for (uint32_t i = 0; i < dim; ++i) s += c[i] * c[i];
    sq_norms_[l] = s;
    max_norm_ = std::max(max_norm_, norm(c, dim));
  }
  max_norm_ *= 1 + 1e-6;
}

void CoarseRanker::select_smallest(const float* row, uint32_t n, uint32_t nprobe, std::vector<Neighbor>& heap,
                                   Neighbor* out) {
  CALICO_DCHECK(nprobe >= 1 && nprobe <= n);
  // A max-heap of the nprobe best so far; a list enters only when it is below the top. Ids
  // ascend, so an equal distance never enters: it loses on the id (Neighbor's order). Most
  // lists fail the one compare with the top (a predicted branch): about nprobe ln(n / nprobe)
  // enter, where nth_element's partitioning mispredicts on every element.
  heap.clear();
  for (uint32_t l = 0; l < nprobe; ++l) heap.push_back({row[l], l});
  std::make_heap(heap.begin(), heap.end());
  float top = heap.front().distance;
  for (uint32_t l = nprobe; l < n; ++l) {
    if (!(row[l] < top)) continue;
    std::pop_heap(heap.begin(), heap.end());
    heap.back() = {row[l], l};
    std::push_heap(heap.begin(), heap.end());
    top = heap.front().distance;
  }
  std::sort_heap(heap.begin(), heap.end());
  std::copy_n(heap.begin(), nprobe, out);
}

void CoarseRanker::rank(const float* q, uint32_t nprobe, Scratch& s, Neighbor* out) const {
  CALICO_CHECK(nprobe >= 1 && nprobe <= k_);
  s.row.resize(k_);
  many_(q, centroids_, dim_, k_, dim_, s.row.data());
  select_smallest(s.row.data(), k_, nprobe, s.order, out);
}

void CoarseRanker::rank_block(const float* qs, size_t nq, uint32_t nprobe, Scratch& s, Neighbor* out) const {
  CALICO_CHECK(nprobe >= 1 && nprobe <= k_);
  blas_single_threaded();
  const bool l2 = metric_ == Metric::kL2;
  constexpr double kUnit = 0x1p-24;
  const double gamma = 4.0 * (dim_ + 4) * kUnit;
  s.order.resize(k_);
  for (size_t b = 0; b < nq; b += kBlockQueries) {
    const size_t m = std::min(kBlockQueries, nq - b);
    s.block.resize(m * k_);
    // dists (m x k) = Q (m x dim) C^T (dim x k), row-major.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(k_),
                static_cast<int>(dim_), 1.0f, qs + b * dim_, static_cast<int>(dim_), centroids_, static_cast<int>(dim_),
                0.0f, s.block.data(), static_cast<int>(k_));
    for (size_t i = 0; i < m; ++i) {
      const float* q = qs + (b + i) * dim_;
      Neighbor* o = out + (b + i) * nprobe;
      const double qn_exact = norm(q, dim_), qn = qn_exact * (1 + 1e-6);
      const double bound = l2 ? gamma * (qn + max_norm_) * (qn + max_norm_) : gamma * (1 + qn * max_norm_);
      const float* dots = s.block.data() + i * k_;
      if (!(bound < 1e30)) {  // norms too large for a finite bound: the kernel for all
        rank(q, nprobe, s, o);
        continue;
      }
      const float qsq = l2 ? static_cast<float>(qn_exact * qn_exact) : 0.0f;
      for (uint32_t l = 0; l < k_; ++l) {
        s.order[l] = {l2 ? qsq + sq_norms_[l] - 2.0f * dots[l] : 1.0f - dots[l], l};
      }
      // t = the nprobe-th smallest approximation; keep every list within t + 2 M.
      if (nprobe < k_) std::nth_element(s.order.begin(), s.order.begin() + (nprobe - 1), s.order.end());
      const double limit = double{s.order[nprobe - 1].distance} + 2 * bound;
      size_t kept = nprobe;
      for (size_t j = nprobe; j < k_; ++j) {
        if (double{s.order[j].distance} <= limit) s.order[kept++] = s.order[j];
      }
      for (size_t j = 0; j < kept; ++j) {
        const uint32_t l = s.order[j].id;
        s.order[j].distance = one_(q, centroids_ + size_t{l} * dim_, dim_);
      }
      std::partial_sort(s.order.begin(), s.order.begin() + nprobe, s.order.begin() + kept);
      std::copy_n(s.order.begin(), nprobe, o);
    }
  }
}

}  // namespace calico::vector
