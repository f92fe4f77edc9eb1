#include "vector/distance.h"

#include <immintrin.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "calico/error.h"
#include "pool/racy_read.h"

namespace calico::vector {

Metric parse_metric(std::string_view name) {
  if (name == "l2") return Metric::kL2;
  if (name == "ip") return Metric::kInnerProduct;
  if (name == "cosine") return Metric::kCosine;
  throw Error(ErrorCode::kInvalidArgument, "unknown metric '" + std::string(name) + "' (known: l2, ip, cosine)");
}

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::kL2: return "l2";
    case Metric::kInnerProduct: return "ip";
    case Metric::kCosine: return "cosine";
  }
  return "?";
}

CALICO_OPTIMISTIC_READER float l2_scalar(const float* a, const float* b, size_t dim) {
  float s = 0;
  for (size_t i = 0; i < dim; ++i) {
    float d = a[i] - b[i];
    s += d * d;
  }
  return s;
}

CALICO_OPTIMISTIC_READER float ip_scalar(const float* a, const float* b, size_t dim) {
  float s = 0;
  for (size_t i = 0; i < dim; ++i) s += a[i] * b[i];
  return 1.0f - s;
}

namespace {

__attribute__((target("avx2,fma"))) float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

CALICO_OPTIMISTIC_READER __attribute__((target("avx2,fma"))) float l2_avx2(const float* a, const float* b, size_t dim) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  for (; i + 8 <= dim; i += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  float s = hsum256(_mm256_add_ps(s0, s1));
  for (; i < dim; ++i) {
    float d = a[i] - b[i];
    s += d * d;
  }
  return s;
}

CALICO_OPTIMISTIC_READER __attribute__((target("avx2,fma"))) float ip_avx2(const float* a, const float* b, size_t dim) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= dim; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum256(_mm256_add_ps(s0, s1));
  for (; i < dim; ++i) s += a[i] * b[i];
  return 1.0f - s;
}

// Horizontal sum of 16 lanes. (gcc 12's _mm512_reduce_add_ps trips a false -Wuninitialized
// in its own header, so the lanes are stored and summed: 16 adds against dim FMAs.)
__attribute__((target("avx512f"))) float hsum512(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

CALICO_OPTIMISTIC_READER __attribute__((target("avx512f"))) float l2_avx512(const float* a, const float* b, size_t dim) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= dim; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  s0 = _mm512_add_ps(s0, s1);
  if (i < dim) {  // the tail, masked (up to two steps of 16)
    for (; i < dim; i += 16) {
      __mmask16 m = dim - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (dim - i)) - 1);
      __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
      s0 = _mm512_fmadd_ps(d, d, s0);
    }
  }
  return hsum512(s0);
}

CALICO_OPTIMISTIC_READER __attribute__((target("avx512f"))) float ip_avx512(const float* a, const float* b, size_t dim) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= dim; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  s0 = _mm512_add_ps(s0, s1);
  for (; i < dim; i += 16) {
    __mmask16 m = dim - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (dim - i)) - 1);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
  }
  return 1.0f - hsum512(s0);
}

enum class Level { kScalar, kAvx2, kAvx512 };

Level detect() {
  __builtin_cpu_init();
  Level best = Level::kScalar;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Level::kAvx2;
  if (__builtin_cpu_supports("avx512f")) best = Level::kAvx512;
  if (const char* cap = std::getenv("CALICO_SIMD")) {
    if (std::strcmp(cap, "scalar") == 0) best = Level::kScalar;
    if (std::strcmp(cap, "avx2") == 0 && best == Level::kAvx512) best = Level::kAvx2;
  }
  return best;
}

Level level() {
  static const Level l = detect();
  return l;
}

}  // namespace

DistanceFn distance_kernel(Metric m) {
  const bool l2 = m == Metric::kL2;
  switch (level()) {
    case Level::kAvx512: return l2 ? l2_avx512 : ip_avx512;
    case Level::kAvx2: return l2 ? l2_avx2 : ip_avx2;
    case Level::kScalar: break;
  }
  return l2 ? l2_scalar : ip_scalar;
}

std::string_view simd_level() {
  switch (level()) {
    case Level::kAvx512: return "avx512";
    case Level::kAvx2: return "avx2";
    case Level::kScalar: break;
  }
  return "scalar";
}

bool normalize(float* v, size_t dim) {
  double n = 0;
  for (size_t i = 0; i < dim; ++i) n += double{v[i]} * v[i];
  if (!(n > 0) || !std::isfinite(n)) return false;
  const float inv = static_cast<float>(1.0 / std::sqrt(n));
  for (size_t i = 0; i < dim; ++i) v[i] *= inv;
  return true;
}

bool all_finite(const float* v, size_t dim) {
  for (size_t i = 0; i < dim; ++i) {
    if (!std::isfinite(v[i])) return false;
  }
  return true;
}

}  // namespace calico::vector
