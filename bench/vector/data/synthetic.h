// Synthetic data for vector-search benchmarks: a SIFT-like clustered generator
// (generate_clustered) and one that behaves like text embeddings (generate_embedding).
//
// The model (all of it fixed by `seed`): `clusters` centres drawn uniformly in [0, box)^dim;
// cluster k has a weight (rows fall in it with probability proportional to it, uniform in
// [0.5, 1.5)), a spread sigma_k (uniform in [spread_min, spread_max)) and a random basis
// A_k (dim x latent_dim, N(0, 1/latent_dim) entries). A row of cluster k is
//     x = c_k + sigma_k * A_k z + e,    z ~ N(0, I_latent), e_i iid uniform with std. dev. `noise`,
// so that neighbourhoods have a low intrinsic dimension like SIFT descriptors have (an
// isotropic 128-dimensional Gaussian is far harder than any real data set). With
// `sift_range`, values are clamped to [0, 255] as SIFT's are (not rounded: exact distance
// ties would make recall ambiguous).
//
// Rows are drawn in fixed blocks of kBlockRows, each from its own RNG seeded by (seed,
// stream, block), so the output depends on (params, rows, stream) only, never on the
// number of threads. Base rows are stream 0, queries stream 1: queries come from the same
// distribution but are not copies of base rows.
#pragma once

#include <cstdint>

#include "vector/data/vector_files.h"

namespace calico::bench::data {

struct ClusteredParams {
  uint32_t dim = 128;
  uint32_t clusters = 1000;
  uint64_t seed = 42;
  uint32_t latent_dim = 16;  // intrinsic dimension of a cluster (capped at dim)
  float box = 128.0f;        // centres uniform in [0, box)^dim
  float spread_min = 20.0f;  // per-cluster sigma along its latent directions (clusters overlap)
  float spread_max = 50.0f;
  float noise = 3.0f;        // standard deviation of the (uniform) noise on every component
  bool sift_range = true;    // clamp to [0, 255]
};

inline constexpr uint64_t kBaseStream = 0;
inline constexpr uint64_t kQueryStream = 1;

// rows x p.dim vectors of stream `stream`, drawn with `threads` threads (0 = hardware
// threads). Errors: kInvalidArgument for dim 0 or > kMaxDim, clusters 0, spreads that are
// negative or out of order.
FloatMatrix generate_clustered(const ClusteredParams& p, uint64_t rows, uint64_t stream, unsigned threads = 0);

// Text-embedding-like vectors (sentence encoders such as MiniLM at 384 dimensions, or 768):
// unit length, to be searched by inner product (= cosine), and anisotropic in the three ways
// such embeddings are (Ethayarajh 2019; Mu and Viswanath 2018):
//  - a common mean direction: random pairs have a positive cosine (about 0.2 by default);
//  - a decaying spectrum: in the latent basis, component i has standard deviation
//    (i + 1)^-decay, so a few directions carry most of the variance (decay 0.5: the first
//    holds about 15%, and about half the dimensions hold 90%);
//  - topics: `topics` centres, each drawn from the same spectrum, that rows gather around.
// A row of topic k is x = normalise(R (mu + topic_scale * D w_k + within * D z)), with D =
// diag((i + 1)^-decay), w_k, z ~ N(0, I), mu a fixed latent vector of norm mean_norm, and R a
// random orthogonal matrix (so the anisotropy is not aligned with the coordinate axes).
// Topic weights are uniform in [0.5, 1.5). Deterministic as generate_clustered: per (params,
// rows, stream), whatever the thread count.
struct EmbeddingParams {
  uint32_t dim = 384;
  uint32_t topics = 1000;
  uint64_t seed = 42;
  float decay = 0.5f;
  float mean_norm = 1.5f;
  float topic_scale = 1.0f;
  float within = 0.7f;
};

// rows x p.dim unit vectors of stream `stream`. Errors: kInvalidArgument for dim 0 or >
// kMaxDim, topics 0, a negative decay, scale or norm.
FloatMatrix generate_embedding(const EmbeddingParams& p, uint64_t rows, uint64_t stream, unsigned threads = 0);

}  // namespace calico::bench::data
