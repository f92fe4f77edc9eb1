#include "vector/rabitq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>

#include "calico/checks.h"
#include "calico/error.h"
#include "io/checksum.h"
#include "vector/kmeans.h"
#include "vector/model_blob.h"

namespace calico::vector {

namespace {

constexpr uint32_t kPadTo = 64;        // D is a multiple of this (whole uint64 words of bits)
constexpr int32_t kInt8Query = 127;    // B > 1: the query's int8 range is [-127, 127]
constexpr uint32_t kQueryLevels = (1u << kQueryPlanes) - 1;  // B = 1: query values 0 .. 15
constexpr size_t kEncodeBlock = 256;   // rows per rotation sgemm in encode()
constexpr size_t kEstimateChunk = 128;  // codes per kernel call in estimate()

bool valid_bits(uint32_t b) { return b == 1 || b == 2 || b == 4; }

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1).
float uniform01(uint64_t& state) { return float(splitmix64(state) >> 40) * 0x1.0p-24f; }

struct RabitqQuery final : QueryState {
  RabitqQuery(const Quantizer* owner, uint32_t dim, uint32_t padded, uint32_t clusters)
      : QueryState(owner), q(dim), r(padded), rot(padded), table(clusters) {}
  std::vector<float> q;          // the query (normalised under kCosine)
  std::vector<float> r, rot;     // s = q - c0, padded, and P s (scratch)
  std::vector<float> table;      // T[k] (header)
  std::vector<uint64_t> planes;  // B = 1: kQueryPlanes x words
  std::vector<int8_t> q8;        // B > 1: padded values
  // <y, s'> ~ c1 dot + c2 ones - c3 (header); |s|.
  float c1 = 0, c2 = 0, c3 = 0, s_norm = 0;
  bool prepared = false;
};

}  // namespace

RabitqQuantizer::RabitqQuantizer(uint32_t dim, uint32_t bits, Metric metric, uint64_t seed, std::vector<float> centroid,
                                 std::vector<float> centroids, uint32_t clusters, RandomRotation rotation)
    : dim_(dim),
      padded_((dim + kPadTo - 1) / kPadTo * kPadTo),
      bits_(bits),
      clusters_(clusters),
      metric_(metric),
      seed_(seed),
      centroid_(std::move(centroid)),
      centroids_(std::move(centroids)),
      rotation_(std::move(rotation)) {
  CALICO_CHECK(valid_bits(bits_) && centroid_.size() == dim_ && rotation_.dim() == padded_);
  CALICO_CHECK(clusters_ >= 1 && clusters_ <= kMaxClusters && centroids_.size() == size_t{clusters_} * dim_);
  const SimdLevel level = active_simd_level();
  binary_dot_ = binary_dot_kernel_at(level);
  if (bits_ > 1) packed_dot_ = packed_dot_kernel_at(bits_, level);
}

RabitqQuantizer RabitqQuantizer::train(const float* sample, uint64_t n, uint32_t dim, const RabitqParams& p) {
  if (dim == 0 || dim > RandomRotation::kMaxDim) {
    throw Error(ErrorCode::kInvalidArgument, "rabitq: dim must be in [1, " + std::to_string(RandomRotation::kMaxDim) +
                                                 "], got " + std::to_string(dim));
  }
  if (!valid_bits(p.bits)) {
    throw Error(ErrorCode::kInvalidArgument, "rabitq: bits must be 1, 2 or 4, got " + std::to_string(p.bits));
  }
  if (n == 0 || sample == nullptr) throw Error(ErrorCode::kInvalidArgument, "rabitq: the training sample is empty");
  if (p.clusters == 0 || p.clusters > kMaxClusters || p.clusters > n) {
    throw Error(ErrorCode::kInvalidArgument, "rabitq: clusters must be in [1, min(256, sample rows = " +
                                                 std::to_string(n) + ")], got " + std::to_string(p.clusters));
  }
  std::vector<float> rows(sample, sample + n * dim);
  std::vector<double> sum(dim, 0.0);
  for (uint64_t i = 0; i < n; ++i) {
    float* row = rows.data() + i * dim;
    if (!all_finite(row, dim)) {
      throw Error(ErrorCode::kInvalidArgument, "rabitq: training row " + std::to_string(i) + " is not finite");
    }
    if (p.metric == Metric::kCosine) normalize(row, dim);  // a zero row stays zero
    for (uint32_t d = 0; d < dim; ++d) sum[d] += row[d];
  }
  std::vector<float> centroid(dim);
  for (uint32_t d = 0; d < dim; ++d) centroid[d] = static_cast<float>(sum[d] / double(n));
  std::vector<float> centroids = centroid;
  if (p.clusters > 1) {
    KmeansParams kp;
    kp.k = p.clusters;
    kp.metric = Metric::kL2;
    kp.iters = p.kmeans_iters;
    kp.seed = p.seed;
    kp.threads = p.threads;
    centroids = kmeans(rows.data(), n, dim, kp).centroids;
  }
  const uint32_t padded = (dim + kPadTo - 1) / kPadTo * kPadTo;
  return RabitqQuantizer(dim, p.bits, p.metric, p.seed, std::move(centroid), std::move(centroids), p.clusters,
                         RandomRotation::generate(padded, p.seed));
}

void RabitqQuantizer::encode_one(const float* rot, double norm, double extra, uint32_t k, uint8_t* code,
                                 std::vector<uint8_t>& values, std::vector<uint32_t>& events) const {
  const size_t D = padded_;
  float add = static_cast<float>(extra), rescale = 0, err = 0;
  std::fill(values.begin(), values.end(), uint8_t{0});
  if (norm > 0) {
    const double inv = 1.0 / norm;
    double ip_yo = 0, y2 = 0;  // <y, o'> and |y|^2
    if (bits_ == 1) {
      for (size_t d = 0; d < D; ++d) {
        values[d] = rot[d] > 0 ? 1 : 0;
        ip_yo += 0.5 * std::abs(rot[d] * inv);
      }
      y2 = 0.25 * double(D);
    } else {
      // Extended RaBitQ's code search: magnitudes m_d = min(floor(t a_d), M - 1) for a scale
      // t, a_d = |o'_d|, y_d = sign(o'_d) (m_d + 1/2). As t grows, one m_d steps up at each
      // critical value (m_d + 1) / a_d; every step changes <y, o'> by a_d and |y|^2 by
      // 2 m_d + 2, so all D (M - 1) candidates are scored in order, and the best prefix of
      // steps is replayed.
      const uint32_t M = 1u << (bits_ - 1);
      using Event = std::pair<double, uint32_t>;
      std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap;
      std::vector<uint32_t>& m = events;  // reused: first the magnitudes, then the step log
      m.assign(D, 0);
      double num = 0;
      for (size_t d = 0; d < D; ++d) {
        const double a = std::abs(rot[d] * inv);
        num += 0.5 * a;
        if (a > 0) heap.emplace(1.0 / a, uint32_t(d));
      }
      double den = 0.25 * double(D);
      double best = num / std::sqrt(den);
      std::vector<uint32_t> log;
      log.reserve(D * (M - 1));
      size_t best_steps = 0;
      while (!heap.empty()) {
        const uint32_t d = heap.top().second;
        heap.pop();
        const double a = std::abs(rot[d] * inv);
        num += a;
        den += 2.0 * m[d] + 2.0;
        ++m[d];
        log.push_back(d);
        if (num / std::sqrt(den) > best) {
          best = num / std::sqrt(den);
          best_steps = log.size();
        }
        if (m[d] < M - 1) heap.emplace((m[d] + 1) / a, d);
      }
      std::fill(m.begin(), m.end(), 0u);
      for (size_t s = 0; s < best_steps; ++s) ++m[log[s]];
      for (size_t d = 0; d < D; ++d) {
        CALICO_DCHECK(m[d] < M);
        values[d] = uint8_t(rot[d] >= 0 ? M + m[d] : M - 1 - m[d]);
        ip_yo += std::abs(rot[d] * inv) * (m[d] + 0.5);
        y2 += (m[d] + 0.5) * (m[d] + 0.5);
      }
    }
    // ip_yo > 0: every y_d has o'_d's sign and |o'| = 1.
    CALICO_DCHECK(ip_yo > 0);
    const double cos = std::min(1.0, ip_yo / std::sqrt(y2));
    const double g = norm / ip_yo;
    const double kappa = metric_ == Metric::kL2 ? 2.0 : 1.0;
    add = static_cast<float>(metric_ == Metric::kL2 ? norm * norm + extra : extra);
    rescale = static_cast<float>(-kappa * g);
    err = static_cast<float>(kappa * norm * std::sqrt(std::max(0.0, 1.0 - cos * cos)) / cos / std::sqrt(double(D) - 1));
  }
  pack_code(values.data(), D, bits_, code);
  uint8_t* f = code + D * bits_ / 8;
  std::memcpy(f, &add, 4);
  std::memcpy(f + 4, &rescale, 4);
  std::memcpy(f + 8, &err, 4);
  if (clusters_ > 1) f[12] = static_cast<uint8_t>(k);
}

void RabitqQuantizer::encode(const float* rows, size_t n, uint8_t* codes) const {
  const size_t D = padded_;
  std::vector<float> r(kEncodeBlock * D), rot(kEncodeBlock * D);
  std::vector<double> norms(kEncodeBlock), extras(kEncodeBlock);
  std::vector<uint32_t> ks(kEncodeBlock);
  std::vector<uint8_t> values(D);
  std::vector<uint32_t> events;
  std::vector<float> x(dim_);
  const DistanceFn l2 = distance_kernel(Metric::kL2);
  for (size_t b = 0; b < n; b += kEncodeBlock) {
    const size_t rows_here = std::min(kEncodeBlock, n - b);
    for (size_t i = 0; i < rows_here; ++i) {
      std::copy_n(rows + (b + i) * dim_, dim_, x.data());
      if (!all_finite(x.data(), dim_)) {
        throw Error(ErrorCode::kInvalidArgument, "rabitq encode: row " + std::to_string(b + i) + " is not finite");
      }
      if (metric_ == Metric::kCosine) normalize(x.data(), dim_);  // a zero row stays zero
      const uint32_t k = clusters_ > 1 ? nearest_centroid(x.data(), centroids_.data(), clusters_, dim_, l2) : 0;
      const float* ck = centroids_.data() + size_t{k} * dim_;
      float* ri = r.data() + i * D;
      // r = x - c_k; extra = 2 <r, c_k - c0> (kL2) or -<r, c0> (ip), the header's `add` terms.
      double n2 = 0, extra = 0;
      for (uint32_t d = 0; d < dim_; ++d) {
        ri[d] = x[d] - ck[d];
        n2 += double{ri[d]} * ri[d];
        extra += metric_ == Metric::kL2 ? 2.0 * ri[d] * (double{ck[d]} - centroid_[d]) : -double{ri[d]} * centroid_[d];
      }
      std::fill(ri + dim_, ri + D, 0.0f);
      norms[i] = std::sqrt(n2);
      extras[i] = extra;
      ks[i] = k;
    }
    rotation_.apply(r.data(), rows_here, rot.data());
    for (size_t i = 0; i < rows_here; ++i) {
      encode_one(rot.data() + i * D, norms[i], extras[i], ks[i], codes + (b + i) * code_bytes(), values, events);
    }
  }
}

std::unique_ptr<QueryState> RabitqQuantizer::new_query() const {
  return std::make_unique<RabitqQuery>(this, dim_, padded_, clusters_);
}

void RabitqQuantizer::prepare(const float* q, QueryState& state) const {
  check_owner(state);
  auto& st = static_cast<RabitqQuery&>(state);
  if (!all_finite(q, dim_)) throw Error(ErrorCode::kInvalidArgument, "rabitq prepare: the query is not finite");
  const size_t D = padded_;
  std::copy_n(q, dim_, st.q.data());
  if (metric_ == Metric::kCosine) normalize(st.q.data(), dim_);
  double s2 = 0;
  for (uint32_t d = 0; d < dim_; ++d) {
    st.r[d] = st.q[d] - centroid_[d];
    s2 += double{st.r[d]} * st.r[d];
  }
  std::fill(st.r.begin() + dim_, st.r.end(), 0.0f);
  rotation_.apply(st.r.data(), 1, st.rot.data());
  // T[k] = |q - c_k|^2 (kL2) or 1 - <q, c_k> (ip): the kernels' distances.
  distance_many_kernel(metric_ == Metric::kL2 ? Metric::kL2 : Metric::kInnerProduct)(
      st.q.data(), centroids_.data(), dim_, clusters_, dim_, st.table.data());
  st.s_norm = static_cast<float>(std::sqrt(s2));
  uint64_t rng = seed_ ^ (uint64_t{io::crc32c(q, size_t{dim_} * 4)} * 0x9E3779B97F4A7C15ull);
  const float* x = st.rot.data();
  if (bits_ == 1) {
    const auto [lo_it, hi_it] = std::minmax_element(x, x + D);
    const float lo = *lo_it, delta = (*hi_it - lo) / float(kQueryLevels);
    const size_t words = D / 64;
    st.planes.assign(kQueryPlanes * words, 0);
    int64_t sum = 0;
    for (size_t d = 0; d < D; ++d) {
      uint32_t v = 0;
      if (delta > 0) {
        const float t = std::floor((x[d] - lo) / delta + uniform01(rng));
        v = static_cast<uint32_t>(std::clamp(t, 0.0f, float(kQueryLevels)));
      }
      sum += v;
      for (uint32_t j = 0; j < kQueryPlanes; ++j) st.planes[j * words + d / 64] |= uint64_t((v >> j) & 1u) << (d % 64);
    }
    st.c1 = delta;
    st.c2 = lo;
    st.c3 = static_cast<float>(0.5 * (double(delta) * double(sum) + double(D) * lo));
  } else {
    float mx = 0;
    for (size_t d = 0; d < D; ++d) mx = std::max(mx, std::abs(x[d]));
    const float delta = mx / float(kInt8Query);
    st.q8.assign(D, 0);
    int64_t sum = 0;
    for (size_t d = 0; d < D; ++d) {
      int32_t v = 0;
      if (delta > 0) {
        const float t = std::floor(x[d] / delta + uniform01(rng));
        v = static_cast<int32_t>(std::clamp(t, -float(kInt8Query), float(kInt8Query)));
      }
      st.q8[d] = static_cast<int8_t>(v);
      sum += v;
    }
    const double offset = ((1u << bits_) - 1) / 2.0;
    st.c1 = delta;
    st.c2 = 0;
    st.c3 = static_cast<float>(double(delta) * offset * double(sum));
  }
  st.prepared = true;
}

template <bool kBounds>
void RabitqQuantizer::estimate_impl(const QueryState& state, const uint8_t* codes, size_t n, float* dist,
                                    float* err, float epsilon) const {
  check_owner(state);
  const auto& st = static_cast<const RabitqQuery&>(state);
  if (!st.prepared) throw Error(ErrorCode::kInvalidArgument, "rabitq estimate: the state was never prepare()d");
  const size_t cb = code_bytes(), D = padded_, factors_at = D * bits_ / 8;
  const float bound = epsilon * st.s_norm;
  const float* table = st.table.data();
  int32_t dot[kEstimateChunk], ones[kEstimateChunk];
  for (size_t b = 0; b < n; b += kEstimateChunk) {
    const size_t m = std::min(kEstimateChunk, n - b);
    const uint8_t* c = codes + b * cb;
    if (bits_ == 1) {
      binary_dot_(c, cb, m, st.planes.data(), D / 64, dot, ones);
    } else {
      packed_dot_(c, cb, m, st.q8.data(), D, dot);
      std::fill_n(ones, m, 0);
    }
    for (size_t i = 0; i < m; ++i) {
      const uint8_t* fp = c + i * cb + factors_at;
      float f[3];
      std::memcpy(f, fp, 12);
      // Codes may come from outside (pages): an id byte at or past K reads T[0], never past
      // the table.
      const uint32_t k = clusters_ > 1 && fp[12] < clusters_ ? fp[12] : 0;
      const float ip = st.c1 * float(dot[i]) + st.c2 * float(ones[i]) - st.c3;
      dist[b + i] = f[0] + table[k] + f[1] * ip;
      if constexpr (kBounds) err[b + i] = bound * f[2];
    }
  }
}

void RabitqQuantizer::estimate(const QueryState& state, const uint8_t* codes, size_t n, float* out) const {
  estimate_impl<false>(state, codes, n, out, nullptr, 0);
}

void RabitqQuantizer::estimate_bounds(const QueryState& state, const uint8_t* codes, size_t n, float* dist,
                                      float* err, float epsilon) const {
  estimate_impl<true>(state, codes, n, dist, err, epsilon);
}

std::vector<uint8_t> RabitqQuantizer::serialize() const {
  BlobWriter w(BlobKind::kRabitq);
  w.u32(dim_);
  w.u32(padded_);
  w.u32(bits_);
  w.u32(static_cast<uint32_t>(metric_));
  w.u64(seed_);
  w.u32(clusters_);
  w.floats(centroid_.data(), centroid_.size());
  w.floats(centroids_.data(), centroids_.size());
  w.floats(rotation_.matrix().data(), rotation_.matrix().size());
  return w.finish();
}

RabitqQuantizer RabitqQuantizer::deserialize(const uint8_t* bytes, size_t n) {
  BlobReader r = BlobReader::open(bytes, n, BlobKind::kRabitq);
  const uint32_t dim = r.u32("dim"), padded = r.u32("padded_dim"), bits = r.u32("bits"), metric = r.u32("metric");
  const uint64_t seed = r.u64("seed");
  const uint32_t clusters = r.u32("clusters");
  if (dim == 0 || dim > RandomRotation::kMaxDim) BlobReader::corrupt("rabitq dim " + std::to_string(dim));
  if (padded != (dim + kPadTo - 1) / kPadTo * kPadTo) BlobReader::corrupt("rabitq padded_dim " + std::to_string(padded));
  if (!valid_bits(bits)) BlobReader::corrupt("rabitq bits " + std::to_string(bits));
  if (metric > static_cast<uint32_t>(Metric::kCosine)) BlobReader::corrupt("rabitq metric " + std::to_string(metric));
  if (clusters == 0 || clusters > kMaxClusters) BlobReader::corrupt("rabitq clusters " + std::to_string(clusters));
  std::vector<float> centroid(dim), centroids(size_t{clusters} * dim), matrix(size_t{padded} * padded);
  r.floats(centroid.data(), dim, "centroid");
  r.floats(centroids.data(), centroids.size(), "centroids");
  r.floats(matrix.data(), matrix.size(), "rotation");
  r.expect_end();
  return RabitqQuantizer(dim, bits, Metric(metric), seed, std::move(centroid), std::move(centroids), clusters,
                         RandomRotation::from_matrix(std::move(matrix), padded));
}

}  // namespace calico::vector
