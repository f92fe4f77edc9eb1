#include "vector/data/synthetic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "calico/error.h"
#include "vector/rotation.h"

namespace calico::bench::data {
namespace {

// Rows per RNG block: the unit of determinism and of work sharing between threads.
constexpr uint64_t kBlockRows = 1024;
constexpr float kTwoPowMinus24 = 1.0f / 16777216.0f;

// The block's own RNG: (seed, stream, block) decide every draw of the block.
std::mt19937_64 block_rng(uint64_t seed, uint64_t stream, uint64_t block) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(stream),
                    static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32)};
  return std::mt19937_64(seq);
}

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
  std::mt19937_64 rng = block_rng(p.seed, stream, block);
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

// rows x dim, filled by fill(block) for every block of kBlockRows rows, on `threads`
// threads (0 = hardware threads) that take blocks in turn.
template <class Fill>
FloatMatrix generate_blocks(uint32_t dim, uint64_t rows, unsigned threads, Fill&& fill) {
  FloatMatrix out;
  out.rows = rows;
  out.dim = dim;
  out.values.resize(rows * dim);
  const uint64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, std::max<uint64_t>(blocks, 1)));
  std::atomic<uint64_t> next{0};
  auto work = [&] {
    for (uint64_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1)) fill(b, &out);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

// Errors: kInvalidArgument naming the generator for dim outside 1..kMaxDim or no groups
// (clusters, topics).
void check_shape(const char* generator, uint32_t dim, uint32_t groups, const char* group_name) {
  if (dim == 0 || dim > kMaxDim) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{} data: dim {} (must be 1..{})", generator, dim, kMaxDim));
  }
  if (groups == 0) throw Error(ErrorCode::kInvalidArgument, fmt::format("{} data: {} must be at least 1", generator, group_name));
}

struct EmbeddingModel {
  uint32_t dim;
  std::vector<float> rotation;  // dim x dim, orthonormal rows: x = rotation^T v, row j = direction j
  std::vector<float> scale;     // dim: (i + 1)^-decay
  std::vector<float> mean;      // dim, latent
  std::vector<float> topics;    // topics x dim, latent (already scaled)
  std::vector<double> weights;  // topics
};

EmbeddingModel make_embedding_model(const EmbeddingParams& p) {
  EmbeddingModel m;
  m.dim = p.dim;
  const uint32_t d = p.dim;
  std::mt19937_64 rng(p.seed ^ 0x656D62656464ull);  // "embedd": apart from the clustered model's draws
  std::normal_distribution<double> gauss(0.0, 1.0);
  // A random orthogonal matrix: Gram-Schmidt (twice, for accuracy) on Gaussian rows.
  std::vector<double> q(size_t{d} * d);
  for (double& x : q) x = gauss(rng);
  for (uint32_t i = 0; i < d; ++i) {
    double* qi = q.data() + size_t{i} * d;
    const double norm = vector::orthogonalize_row(q.data(), d, i);
    for (uint32_t c = 0; c < d; ++c) qi[c] /= norm;
  }
  m.rotation.assign(q.begin(), q.end());
  m.scale.resize(d);
  for (uint32_t i = 0; i < d; ++i) m.scale[i] = static_cast<float>(std::pow(double(i + 1), -double(p.decay)));
  m.mean.resize(d);
  double norm = 0;
  for (float& x : m.mean) {
    x = static_cast<float>(gauss(rng));
    norm += double{x} * x;
  }
  for (float& x : m.mean) x = static_cast<float>(x * p.mean_norm / std::sqrt(norm));
  m.topics.resize(size_t{p.topics} * d);
  for (uint32_t k = 0; k < p.topics; ++k) {
    for (uint32_t i = 0; i < d; ++i) m.topics[size_t{k} * d + i] = static_cast<float>(p.topic_scale * m.scale[i] * gauss(rng));
  }
  std::uniform_real_distribution<double> weight(0.5, 1.5);
  m.weights.resize(p.topics);
  for (double& w : m.weights) w = weight(rng);
  return m;
}

void fill_embedding_block(const EmbeddingParams& p, const EmbeddingModel& m, uint64_t stream, uint64_t block,
                          uint64_t rows, FloatMatrix* out) {
  std::mt19937_64 rng = block_rng(p.seed, stream, block);
  std::discrete_distribution<uint32_t> pick(m.weights.begin(), m.weights.end());
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  const uint32_t d = m.dim;
  std::vector<float> v(d);
  const uint64_t last = std::min(rows, (block + 1) * kBlockRows);
  for (uint64_t r = block * kBlockRows; r < last; ++r) {
    const float* t = m.topics.data() + size_t{pick(rng)} * d;
    for (uint32_t i = 0; i < d; ++i) v[i] = m.mean[i] + t[i] + p.within * m.scale[i] * gauss(rng);
    float* x = out->row(r);
    std::fill(x, x + d, 0.0f);
    for (uint32_t j = 0; j < d; ++j) {  // x = sum_j v_j * direction_j
      const float* dir = m.rotation.data() + size_t{j} * d;
      for (uint32_t c = 0; c < d; ++c) x[c] += v[j] * dir[c];
    }
    double norm = 0;
    for (uint32_t c = 0; c < d; ++c) norm += double{x[c]} * x[c];
    const float inv = static_cast<float>(1.0 / std::sqrt(norm));  // > 0: the mean keeps it off 0 almost surely
    for (uint32_t c = 0; c < d; ++c) x[c] *= inv;
  }
}

}  // namespace

FloatMatrix generate_embedding(const EmbeddingParams& p, uint64_t rows, uint64_t stream, unsigned threads) {
  check_shape("embedding", p.dim, p.topics, "topics");
  if (!(p.decay >= 0 && p.mean_norm >= 0 && p.topic_scale >= 0 && p.within > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("embedding data: need decay >= 0, mean_norm >= 0, topic_scale >= 0, within > 0 "
                            "(got {}, {}, {}, {})",
                            p.decay, p.mean_norm, p.topic_scale, p.within));
  }
  const EmbeddingModel model = make_embedding_model(p);
  return generate_blocks(p.dim, rows, threads, [&](uint64_t b, FloatMatrix* out) {
    fill_embedding_block(p, model, stream, b, rows, out);
  });
}

FloatMatrix generate_clustered(const ClusteredParams& p, uint64_t rows, uint64_t stream, unsigned threads) {
  check_shape("clustered", p.dim, p.clusters, "clusters");
  if (!(p.spread_min >= 0 && p.spread_min <= p.spread_max && p.noise >= 0 && p.box > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("clustered data: need box > 0, 0 <= spread_min <= spread_max, noise >= 0 "
                            "(got box {}, spread {}..{}, noise {})",
                            p.box, p.spread_min, p.spread_max, p.noise));
  }
  const Model model = make_model(p);
  return generate_blocks(p.dim, rows, threads, [&](uint64_t b, FloatMatrix* out) {
    fill_block(p, model, stream, b, rows, out);
  });
}

}  // namespace calico::bench::data
