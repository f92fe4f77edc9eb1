#include "vector/kmeans.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::vector {

namespace {

// Rows per thread below which splitting the work is not worth a thread start.
constexpr uint64_t kMinRowsPerThread = 1024;

uint32_t thread_count(uint32_t requested) {
  uint32_t t = requested != 0 ? requested : std::thread::hardware_concurrency();
  return std::clamp<uint32_t>(t, 1, kMaxThreads);
}

// Runs fn(begin, end) over [0, n) split into contiguous ranges, one per thread; the calling
// thread takes the first range. fn must not throw.
template <class Fn>
void parallel_for(uint64_t n, uint32_t threads, const Fn& fn) {
  const uint64_t t = std::min<uint64_t>(thread_count(threads), std::max<uint64_t>(1, n / kMinRowsPerThread));
  if (t <= 1) {
    fn(uint64_t{0}, n);
    return;
  }
  const uint64_t per = (n + t - 1) / t;
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  for (uint64_t i = 1; i < t; ++i) {
    const uint64_t b = std::min(n, i * per), e = std::min(n, b + per);
    workers.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(uint64_t{0}, std::min(n, per));
  for (std::thread& w : workers) w.join();
}

// Squared L2 distances are the k-means++ weights and the split criterion for every metric:
// they are non-negative, which 1 - <a, b> is not.
float l2(const float* a, const float* b, uint32_t dim) { return distance_kernel(Metric::kL2)(a, b, dim); }

// k distinct row indices, ascending (selection sampling, Knuth's Algorithm S).
std::vector<uint64_t> sample_rows(uint64_t n, uint64_t k, std::mt19937_64& rng) {
  std::vector<uint64_t> out;
  out.reserve(k);
  for (uint64_t i = 0; i < n && out.size() < k; ++i) {
    const uint64_t left = n - i, need = k - out.size();
    if (std::uniform_int_distribution<uint64_t>(0, left - 1)(rng) < need) out.push_back(i);
  }
  CALICO_CHECK(out.size() == k);
  return out;
}

// Greedy k-means++: each step draws `trials` candidates with probability proportional to
// the squared distance to the nearest centre chosen so far and keeps the one that leaves
// the smallest potential (sum of those distances).
void init_plus_plus(const float* data, uint64_t n, uint32_t dim, uint32_t k, uint32_t threads, std::mt19937_64& rng,
                    float* centroids) {
  const uint32_t trials = 2 + static_cast<uint32_t>(std::log(static_cast<double>(k)));
  auto row = [&](uint64_t i) { return data + i * dim; };
  uint64_t first = std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  std::copy_n(row(first), dim, centroids);
  std::vector<float> best(n), candidate(n), kept(n);  // kept: minima with the best candidate
  parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) best[i] = l2(row(i), centroids, dim);
  });
  std::vector<double> prefix(n);
  for (uint32_t c = 1; c < k; ++c) {
    double total = 0;
    for (uint64_t i = 0; i < n; ++i) prefix[i] = total += best[i];
    double best_potential = -1;
    uint64_t chosen = 0;
    for (uint32_t t = 0; t < trials; ++t) {
      uint64_t pick;
      if (total > 0) {
        const double r = std::uniform_real_distribution<double>(0, total)(rng);
        pick = std::min<uint64_t>(n - 1, std::upper_bound(prefix.begin(), prefix.end(), r) - prefix.begin());
      } else {  // every row sits on a centre (repeated rows): any row will do
        pick = std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
      }
      // The per-row minima in parallel, their sum serially (the same for any thread count).
      parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) candidate[i] = std::min(best[i], l2(row(i), row(pick), dim));
      });
      double potential = 0;
      for (uint64_t i = 0; i < n; ++i) potential += candidate[i];
      if (best_potential < 0 || potential < best_potential) {
        best_potential = potential;
        chosen = pick;
        kept.swap(candidate);
      }
    }
    std::copy_n(row(chosen), dim, centroids + size_t{c} * dim);
    best.swap(kept);
  }
}

}  // namespace

uint32_t nearest_centroid(const float* v, const float* centroids, uint32_t k, uint32_t dim, DistanceFn fn,
                          float* dist) {
  CALICO_DCHECK(k >= 1);
  uint32_t best = 0;
  float best_d = fn(v, centroids, dim);
  for (uint32_t j = 1; j < k; ++j) {
    const float d = fn(v, centroids + size_t{j} * dim, dim);
    if (d < best_d) {  // strict: ties keep the lower index
      best_d = d;
      best = j;
    }
  }
  if (dist != nullptr) *dist = best_d;
  return best;
}

void assign_nearest(const float* rows, uint64_t n, uint32_t dim, const float* centroids, uint32_t k, Metric metric,
                    uint32_t threads, uint32_t* out, float* dist) {
  const DistanceFn fn = distance_kernel(metric);
  parallel_for(n, threads, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      out[i] = nearest_centroid(rows + i * dim, centroids, k, dim, fn, dist != nullptr ? dist + i : nullptr);
    }
  });
}

KmeansResult kmeans(const float* data, uint64_t n, uint32_t dim, const KmeansParams& p) {
  if (dim == 0 || n == 0 || data == nullptr || p.k == 0 || p.k > n) {
    throw Error(ErrorCode::kInvalidArgument, "kmeans: need dim >= 1, rows >= 1 and 1 <= k <= rows (dim " +
                                                 std::to_string(dim) + ", rows " + std::to_string(n) + ", k " +
                                                 std::to_string(p.k) + ")");
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!all_finite(data + i * dim, dim)) {
      throw Error(ErrorCode::kInvalidArgument, "kmeans: row " + std::to_string(i) + " is not finite");
    }
  }
  const uint32_t k = p.k;
  KmeansResult res;
  res.k = k;
  res.dim = dim;
  res.centroids.resize(size_t{k} * dim);
  res.assignment.resize(n);
  std::mt19937_64 rng(p.seed);
  auto row = [&](uint64_t i) { return data + i * dim; };
  auto centroid = [&](uint32_t j) { return res.centroids.data() + size_t{j} * dim; };

  const double pp_work = double(n) * k * (2 + std::log(static_cast<double>(k)));
  res.plus_plus = p.init == KmeansInit::kPlusPlus || (p.init == KmeansInit::kAuto && pp_work <= kPlusPlusBudget);
  if (res.plus_plus) {
    init_plus_plus(data, n, dim, k, p.threads, rng, res.centroids.data());
  } else {
    std::vector<uint64_t> picks = sample_rows(n, k, rng);
    std::shuffle(picks.begin(), picks.end(), rng);
    for (uint32_t j = 0; j < k; ++j) std::copy_n(row(picks[j]), dim, centroid(j));
  }

  std::vector<double> sums(size_t{k} * dim);
  std::vector<uint64_t> counts(k);
  std::vector<float> mean(dim);
  for (uint32_t it = 0; it < p.iters; ++it) {
    assign_nearest(data, n, dim, res.centroids.data(), k, p.metric, p.threads, res.assignment.data());
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(counts.begin(), counts.end(), 0);
    for (uint64_t i = 0; i < n; ++i) {
      const uint32_t a = res.assignment[i];
      ++counts[a];
      double* s = sums.data() + size_t{a} * dim;
      const float* x = row(i);
      for (uint32_t d = 0; d < dim; ++d) s[d] += x[d];
    }
    for (uint32_t j = 0; j < k; ++j) {
      if (counts[j] == 0) continue;
      for (uint32_t d = 0; d < dim; ++d) mean[d] = static_cast<float>(sums[size_t{j} * dim + d] / double(counts[j]));
      // kCosine: a zero mean (opposite rows) cannot be normalised; the centroid stays.
      if (p.metric == Metric::kCosine && !normalize(mean.data(), dim)) continue;
      std::copy(mean.begin(), mean.end(), centroid(j));
    }
    // Empty clusters: split the largest cluster that has a row off its centroid (see the
    // header). far_row / far_d: each cluster's row farthest from its centroid (squared L2),
    // found in one pass, and again for a cluster after a row was taken from it.
    if (std::find(counts.begin(), counts.end(), 0) == counts.end()) continue;
    std::vector<uint64_t> far_row(k, n);
    std::vector<float> far_d(k, 0);
    auto consider = [&](uint64_t i, uint32_t c) {
      const float d = l2(row(i), centroid(c), dim);
      if (d > far_d[c]) {
        far_d[c] = d;
        far_row[c] = i;
      }
    };
    for (uint64_t i = 0; i < n; ++i) consider(i, res.assignment[i]);
    for (uint32_t j = 0; j < k; ++j) {
      if (counts[j] != 0) continue;
      uint32_t split = k;  // the largest splittable cluster (ties: the lowest index)
      for (uint32_t c = 0; c < k; ++c) {
        if (far_d[c] > 0 && counts[c] >= 2 && (split == k || counts[c] > counts[split])) split = c;
      }
      if (split == k) break;  // every cluster's rows coincide with its centroid
      const uint64_t taken = far_row[split];
      std::copy_n(row(taken), dim, centroid(j));
      res.assignment[taken] = j;  // so that a second split of `split` takes another row
      counts[j] = counts[split] / 2;
      counts[split] -= counts[j];
      far_d[split] = 0;
      far_row[split] = n;
      for (uint64_t i = 0; i < n; ++i) {
        if (res.assignment[i] == split) consider(i, split);
      }
      ++res.empty_repairs;
    }
  }

  std::vector<float> dist(n);
  assign_nearest(data, n, dim, res.centroids.data(), k, p.metric, p.threads, res.assignment.data(), dist.data());
  res.sizes.assign(k, 0);
  for (uint64_t i = 0; i < n; ++i) {
    ++res.sizes[res.assignment[i]];
    res.objective += dist[i];
  }
  return res;
}

}  // namespace calico::vector
