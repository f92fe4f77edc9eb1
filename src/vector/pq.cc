#include "vector/pq.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "calico/checks.h"
#include "calico/error.h"
#include "vector/kmeans.h"
#include "vector/model_blob.h"

namespace calico::vector {

namespace {

constexpr size_t kEncodeBlock = 256;  // rows normalised at a time under kCosine

struct PqQuery final : QueryState {
  PqQuery(const Quantizer* owner, size_t table, uint32_t dim) : QueryState(owner), table(table), q(dim) {}
  std::vector<float> table;  // m x ksub
  std::vector<float> q;      // the query (normalised under kCosine)
  float constant = 0;
  bool prepared = false;
};

}  // namespace

PqQuantizer::PqQuantizer(uint32_t dim, uint32_t m, uint32_t bits, Metric metric, std::vector<float> centroids)
    : dim_(dim), m_(m), bits_(bits), ksub_(1u << bits), dsub_(dim / m), wide_(dim % m), metric_(metric),
      centroids_(std::move(centroids)) {
  CALICO_CHECK(m_ > 0 && m_ <= dim_ && centroids_.size() == size_t{ksub_} * dim_);
}

PqQuantizer PqQuantizer::train(const float* sample, uint64_t n, uint32_t dim, const PqParams& p) {
  if (dim == 0) throw Error(ErrorCode::kInvalidArgument, "pq: dim must be at least 1");
  if (p.m == 0 || p.m > dim) {
    throw Error(ErrorCode::kInvalidArgument, "pq: subspaces m = " + std::to_string(p.m) +
                                                 " must be in [1, dim = " + std::to_string(dim) + "]");
  }
  if (p.bits < 1 || p.bits > 8) {
    throw Error(ErrorCode::kInvalidArgument, "pq: bits must be in [1, 8], got " + std::to_string(p.bits));
  }
  const uint32_t ksub = 1u << p.bits;
  if (n == 0 || sample == nullptr) throw Error(ErrorCode::kInvalidArgument, "pq: the training sample is empty");
  if (n < ksub) {
    throw Error(ErrorCode::kInvalidArgument, "pq: the training sample has " + std::to_string(n) +
                                                 " rows, fewer than the 2^bits = " + std::to_string(ksub) + " centroids");
  }
  std::vector<float> rows(sample, sample + n * dim);
  for (uint64_t i = 0; i < n; ++i) {
    if (!all_finite(rows.data() + i * dim, dim)) {
      throw Error(ErrorCode::kInvalidArgument, "pq: training row " + std::to_string(i) + " is not finite");
    }
    if (p.metric == Metric::kCosine) normalize(rows.data() + i * dim, dim);
  }
  std::vector<float> centroids(size_t{ksub} * dim);
  std::vector<float> sub(n * (dim / p.m + 1));
  const uint32_t base = dim / p.m, wide = dim % p.m;
  for (uint32_t j = 0; j < p.m; ++j) {
    const uint32_t dsub = base + (j < wide ? 1 : 0), off = j * base + std::min(j, wide);  // width(j), offset(j)
    for (uint64_t i = 0; i < n; ++i) std::copy_n(rows.data() + i * dim + off, dsub, sub.data() + i * dsub);
    KmeansParams kp;
    kp.k = ksub;
    kp.metric = Metric::kL2;
    kp.iters = p.iters;
    kp.seed = p.seed + j;
    kp.init = KmeansInit::kRandom;  // as faiss's PQ; k-means++ costs more than the Lloyd steps here
    kp.threads = p.threads;
    const KmeansResult km = kmeans(sub.data(), n, dsub, kp);
    std::copy(km.centroids.begin(), km.centroids.end(), centroids.begin() + size_t{ksub} * off);
  }
  return PqQuantizer(dim, p.m, p.bits, p.metric, std::move(centroids));
}

void PqQuantizer::encode(const float* rows, size_t n, uint8_t* codes) const {
  const DistanceManyFn many = distance_many_kernel(Metric::kL2);
  std::vector<float> row(dim_), dist(ksub_);
  for (size_t i = 0; i < n; ++i) {
    std::copy_n(rows + i * dim_, dim_, row.data());
    if (!all_finite(row.data(), dim_)) {
      throw Error(ErrorCode::kInvalidArgument, "pq encode: row " + std::to_string(i) + " is not finite");
    }
    if (metric_ == Metric::kCosine) normalize(row.data(), dim_);
    for (uint32_t j = 0; j < m_; ++j) {
      many(row.data() + offset(j), centroids_.data() + size_t{ksub_} * offset(j), width(j), ksub_, width(j),
           dist.data());
      codes[i * m_ + j] = static_cast<uint8_t>(std::min_element(dist.begin(), dist.end()) - dist.begin());
    }
  }
}

std::unique_ptr<QueryState> PqQuantizer::new_query() const {
  return std::make_unique<PqQuery>(this, size_t{m_} * ksub_, dim_);
}

void PqQuantizer::prepare(const float* q, QueryState& state) const {
  check_owner(state);
  auto& st = static_cast<PqQuery&>(state);
  if (!all_finite(q, dim_)) throw Error(ErrorCode::kInvalidArgument, "pq prepare: the query is not finite");
  std::copy_n(q, dim_, st.q.data());
  if (metric_ == Metric::kCosine) normalize(st.q.data(), dim_);
  const DistanceManyFn many = distance_many_kernel(metric_ == Metric::kInnerProduct ? Metric::kInnerProduct : Metric::kL2);
  for (uint32_t j = 0; j < m_; ++j) {
    many(st.q.data() + offset(j), centroids_.data() + size_t{ksub_} * offset(j), width(j), ksub_, width(j),
         st.table.data() + size_t{j} * ksub_);
  }
  st.constant = metric_ == Metric::kInnerProduct ? -float(m_ - 1) : 0.0f;
  if (metric_ == Metric::kCosine) {
    for (float& t : st.table) t *= 0.5f;  // |q - x^|^2 / 2
  }
  st.prepared = true;
}

void PqQuantizer::estimate(const QueryState& state, const uint8_t* codes, size_t n, float* out) const {
  check_owner(state);
  const auto& st = static_cast<const PqQuery&>(state);
  if (!st.prepared) throw Error(ErrorCode::kInvalidArgument, "pq estimate: the state was never prepare()d");
  const float* t = st.table.data();
  const size_t ks = ksub_, m = m_;
  size_t i = 0;
  // Four codes at a time: four independent sums keep four table loads in flight.
  for (; i + 4 <= n; i += 4) {
    const uint8_t* c = codes + i * m;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t j = 0; j < m; ++j) {
      const float* tj = t + j * ks;
      s0 += tj[c[j]];
      s1 += tj[c[m + j]];
      s2 += tj[c[2 * m + j]];
      s3 += tj[c[3 * m + j]];
    }
    out[i] = st.constant + s0;
    out[i + 1] = st.constant + s1;
    out[i + 2] = st.constant + s2;
    out[i + 3] = st.constant + s3;
  }
  for (; i < n; ++i) {
    const uint8_t* c = codes + i * m;
    float s = 0;
    for (size_t j = 0; j < m; ++j) s += t[j * ks + c[j]];
    out[i] = st.constant + s;
  }
}

std::vector<uint8_t> PqQuantizer::serialize() const {
  BlobWriter w(BlobKind::kPq);
  w.u32(dim_);
  w.u32(m_);
  w.u32(bits_);
  w.u32(static_cast<uint32_t>(metric_));
  w.floats(centroids_.data(), centroids_.size());
  return w.finish();
}

PqQuantizer PqQuantizer::deserialize(const uint8_t* bytes, size_t n) {
  BlobReader r = BlobReader::open(bytes, n, BlobKind::kPq);
  const uint32_t dim = r.u32("dim"), m = r.u32("m"), bits = r.u32("bits"), metric = r.u32("metric");
  // dim bounded so that the centroid count below cannot overflow; a real model is far smaller.
  constexpr uint32_t kMaxDim = 1u << 16;
  if (dim == 0 || dim > kMaxDim) BlobReader::corrupt("pq dim " + std::to_string(dim));
  if (m == 0 || m > dim) BlobReader::corrupt("pq m " + std::to_string(m) + " for dim " + std::to_string(dim));
  if (bits < 1 || bits > 8) BlobReader::corrupt("pq bits " + std::to_string(bits));
  if (metric > static_cast<uint32_t>(Metric::kCosine)) BlobReader::corrupt("pq metric " + std::to_string(metric));
  std::vector<float> centroids(size_t{dim} << bits);  // ksub x dim, by subspace
  r.floats(centroids.data(), centroids.size(), "centroids");
  r.expect_end();
  return PqQuantizer(dim, m, bits, Metric(metric), std::move(centroids));
}

}  // namespace calico::vector
