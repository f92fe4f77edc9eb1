#include "data/synthetic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "calico/error.h"

namespace calico::bench::data {
namespace {

// Rows per RNG block: the unit of determinism and of work sharing between threads.
constexpr uint64_t kBlockRows = 1024;
constexpr float kTwoPowMinus24 = 1.0f / 16777216.0f;

struct Model {
  uint32_t dim;
  uint32_t latent;
  std::vector<float> centres;  // clusters x dim
  std::vector<float> sigma;    // clusters
  std::vector<float> basis;    // clusters x latent x dim: latent direction j of cluster k is contiguous
  std::vector<double> weights;  // clusters
};

Model make_model(const ClusteredParams& p) {
  Model m;
  m.dim = p.dim;
  m.latent = std::min(p.latent_dim, p.dim);
  std::mt19937_64 rng(p.seed);
  std::uniform_real_distribution<float> centre(0.0f, p.box);
  std::uniform_real_distribution<float> spread(p.spread_min, p.spread_max);
  std::uniform_real_distribution<double> weight(0.5, 1.5);
  std::normal_distribution<float> gauss(0.0f, 1.0f / std::sqrt(static_cast<float>(std::max(m.latent, 1u))));
  m.centres.resize(size_t{p.clusters} * p.dim);
  for (float& c : m.centres) c = centre(rng);
  m.sigma.resize(p.clusters);
  for (float& s : m.sigma) s = spread(rng);
  m.weights.resize(p.clusters);
  for (double& w : m.weights) w = weight(rng);
  m.basis.resize(size_t{p.clusters} * m.latent * p.dim);
  for (float& b : m.basis) b = gauss(rng);
  return m;
}

void fill_block(const ClusteredParams& p, const Model& m, uint64_t stream, uint64_t block, uint64_t rows,
                FloatMatrix* out) {
  std::seed_seq seq{static_cast<uint32_t>(p.seed), static_cast<uint32_t>(p.seed >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32)};
  std::mt19937_64 rng(seq);
  std::discrete_distribution<uint32_t> pick(m.weights.begin(), m.weights.end());
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> z(m.latent);
  // Uniform on [-w/2, w/2) has standard deviation w / sqrt(12).
  const float noise_scale = p.noise * std::sqrt(12.0f);
  const uint64_t first = block * kBlockRows;
  const uint64_t last = std::min(rows, first + kBlockRows);
  for (uint64_t r = first; r < last; ++r) {
    const uint32_t k = pick(rng);
    float* x = out->row(r);
    const float* c = m.centres.data() + size_t{k} * m.dim;
    // Noise: uniform with standard deviation p.noise, two 24-bit uniforms per 64-bit draw (a
    // Gaussian per component would cost most of the generator's time).
    for (uint32_t i = 0; i < m.dim; i += 2) {
      const uint64_t bits = rng();
      x[i] = c[i] + noise_scale * (static_cast<float>(bits >> 40) * kTwoPowMinus24 - 0.5f);
      if (i + 1 < m.dim) {
        x[i + 1] = c[i + 1] + noise_scale * (static_cast<float>(bits & 0xFFFFFF) * kTwoPowMinus24 - 0.5f);
      }
    }
    for (float& zj : z) zj = m.sigma[k] * gauss(rng);
    const float* a = m.basis.data() + size_t{k} * m.latent * m.dim;
    for (uint32_t j = 0; j < m.latent; ++j, a += m.dim) {
      for (uint32_t i = 0; i < m.dim; ++i) x[i] += z[j] * a[i];
    }
    if (p.sift_range) {
      for (uint32_t i = 0; i < m.dim; ++i) x[i] = std::clamp(x[i], 0.0f, 255.0f);
    }
  }
}

}  // namespace

FloatMatrix generate_clustered(const ClusteredParams& p, uint64_t rows, uint64_t stream, unsigned threads) {
  if (p.dim == 0 || p.dim > kMaxDim) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("clustered data: dim {} (must be 1..{})", p.dim, kMaxDim));
  }
  if (p.clusters == 0) throw Error(ErrorCode::kInvalidArgument, "clustered data: clusters must be at least 1");
  if (!(p.spread_min >= 0 && p.spread_min <= p.spread_max && p.noise >= 0 && p.box > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("clustered data: need box > 0, 0 <= spread_min <= spread_max, noise >= 0 "
                            "(got box {}, spread {}..{}, noise {})",
                            p.box, p.spread_min, p.spread_max, p.noise));
  }
  const Model model = make_model(p);
  FloatMatrix out;
  out.rows = rows;
  out.dim = p.dim;
  out.values.resize(rows * p.dim);
  const uint64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, std::max<uint64_t>(blocks, 1)));
  std::atomic<uint64_t> next{0};
  auto work = [&] {
    for (uint64_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1)) fill_block(p, model, stream, b, rows, &out);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace calico::bench::data
