// ZipfGenerator: YCSB's scrambled-free Zipfian generator (Gray et al., "Quickly generating
// billion-record synthetic databases"), values in [0, n), item 0 the most popular.
// Construction is O(n) (zeta); next() is O(1). theta in (0, 1).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace calico::bench {

class ZipfGenerator {
 public:
  ZipfGenerator(uint64_t n, double theta) : n_(n), theta_(theta) {
    zeta_n_ = zeta(n, theta);
    alpha_ = 1.0 / (1.0 - theta);
    double zeta2 = zeta(2, theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zeta_n_);
  }

  template <class Rng>
  uint64_t next(Rng& rng) {
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    auto v = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return v < n_ ? v : n_ - 1;
  }

 private:
  static double zeta(uint64_t n, double theta) {
    double sum = 0;
    for (uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
    return sum;
  }

  uint64_t n_;
  double theta_, zeta_n_, alpha_, eta_;
};

// YCSB's scrambling hash (FNV-1a 64 over the 8 bytes): a Zipf rank -> fnv1a64(rank) % n
// spreads the hot items over the key space (YCSB's ScrambledZipfianGenerator).
inline uint64_t fnv1a64(uint64_t x) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace calico::bench
