#include "vector/data/ground_truth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "calico/error.h"

namespace calico::bench::data {
namespace {

// A tile of queries (32 x 128 floats = 16 KB) stays in L1 while base rows stream past it.
constexpr uint64_t kQueryTile = 32;
// Base rows between two progress updates.
constexpr uint64_t kBaseTile = 4096;
// Runs with fewer multiply-adds than this print no progress.
constexpr double kProgressMinFlops = 1e10;

// Bounded max-heap of the k best (distance, id) seen so far; top() is the worst kept.
class TopK {
 public:
  explicit TopK(uint32_t k) : k_(k) { heap_.reserve(k); }

  void offer(float distance, uint32_t id) {
    if (heap_.size() < k_) {
      heap_.push_back({distance, id});
      std::push_heap(heap_.begin(), heap_.end());
      return;
    }
    const vector::Neighbor& worst = heap_.front();
    if (distance > worst.distance) return;  // the common case, one compare
    const vector::Neighbor cand{distance, id};
    if (!(cand < worst)) return;
    std::pop_heap(heap_.begin(), heap_.end());
    heap_.back() = cand;
    std::push_heap(heap_.begin(), heap_.end());
  }

  std::vector<vector::Neighbor> sorted() && {
    std::sort_heap(heap_.begin(), heap_.end());
    return std::move(heap_);
  }

 private:
  uint32_t k_;
  std::vector<vector::Neighbor> heap_;
};

FloatMatrix normalized_copy(const FloatMatrix& m) {
  FloatMatrix out = m;
  for (uint64_t r = 0; r < out.rows; ++r) vector::normalize(out.row(r), out.dim);  // zero rows stay zero
  return out;
}

}  // namespace

std::vector<std::vector<vector::Neighbor>> exact_neighbors(const FloatMatrix& base_in, const FloatMatrix& queries_in,
                                                           vector::Metric metric, const GroundTruthOptions& options) {
  if (base_in.dim != queries_in.dim) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ground truth: base dim {} differs from query dim {}", base_in.dim, queries_in.dim));
  }
  if (options.k == 0 || options.k > base_in.rows) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ground truth: k = {} must be in 1..{} (the base rows)", options.k, base_in.rows));
  }
  if (base_in.rows > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("ground truth: {} base rows exceed uint32 ids", base_in.rows));
  }
  FloatMatrix base_norm, queries_norm;
  if (metric == vector::Metric::kCosine) {
    base_norm = normalized_copy(base_in);
    queries_norm = normalized_copy(queries_in);
  }
  const FloatMatrix& base = metric == vector::Metric::kCosine ? base_norm : base_in;
  const FloatMatrix& queries = metric == vector::Metric::kCosine ? queries_norm : queries_in;
  const vector::DistanceFn dist = vector::distance_kernel(metric);
  const uint32_t dim = base.dim;

  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  // Small query sets: shrink the tile so that every thread has one.
  const uint64_t tile = std::clamp<uint64_t>((queries.rows + threads - 1) / threads, 1, kQueryTile);
  const uint64_t tiles = (queries.rows + tile - 1) / tile;
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, std::max<uint64_t>(tiles, 1)));

  const uint64_t total_pairs = base.rows * queries.rows;
  const bool progress =
      options.progress && static_cast<double>(total_pairs) * static_cast<double>(dim) >= kProgressMinFlops;
  const auto start = std::chrono::steady_clock::now();
  std::atomic<uint64_t> done_pairs{0};
  std::atomic<uint64_t> next_tile{0};
  std::vector<std::vector<vector::Neighbor>> out(queries.rows);

  auto work = [&] {
    std::vector<TopK> best;
    for (uint64_t t = next_tile.fetch_add(1); t < tiles; t = next_tile.fetch_add(1)) {
      const uint64_t q0 = t * tile, q1 = std::min(queries.rows, q0 + tile);
      best.assign(q1 - q0, TopK(options.k));
      for (uint64_t b0 = 0; b0 < base.rows; b0 += kBaseTile) {
        const uint64_t b1 = std::min(base.rows, b0 + kBaseTile);
        for (uint64_t b = b0; b < b1; ++b) {
          const float* x = base.row(b);
          for (uint64_t q = q0; q < q1; ++q) best[q - q0].offer(dist(queries.row(q), x, dim), static_cast<uint32_t>(b));
        }
        if (progress) {
          const uint64_t step = (b1 - b0) * (q1 - q0);
          const uint64_t before = done_pairs.fetch_add(step);
          const uint64_t pct_before = before * 20 / total_pairs, pct_after = (before + step) * 20 / total_pairs;
          if (pct_after != pct_before) {
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print(stderr, "ground truth: {:3}% ({:.1f} s)\n", pct_after * 5, s);
          }
        }
      }
      for (uint64_t q = q0; q < q1; ++q) out[q] = std::move(best[q - q0]).sorted();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return out;
}

IdMatrix exact_ground_truth(const FloatMatrix& base, const FloatMatrix& queries, vector::Metric metric,
                            const GroundTruthOptions& options) {
  const auto neighbors = exact_neighbors(base, queries, metric, options);
  IdMatrix gt;
  gt.rows = queries.rows;
  gt.dim = options.k;
  gt.ids.resize(gt.rows * gt.dim);
  for (uint64_t q = 0; q < gt.rows; ++q) {
    for (uint32_t j = 0; j < gt.dim; ++j) gt.row(q)[j] = neighbors[q][j].id;
  }
  return gt;
}

}  // namespace calico::bench::data
