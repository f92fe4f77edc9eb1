#include "vector/distance.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "calico/error.h"
#include "calico/optimistic_reader.h"
#include "vector/simd_kernels.h"

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

// Horizontal sums, as one tree for every kernel: 512 -> 256 -> 128 bits by adding the
// halves, then x = (x0 + x2) + (x1 + x3). The many-vector kernels (distance_many_kernel)
// reduce four accumulators at once with the same tree (reduce4), so that their values are
// bit-identical to the one-vector kernels'.
__attribute__((target("avx2,fma"))) __m128 fold256(__m256 v) {
  return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
}

__attribute__((target("avx2,fma"))) float hsum128(__m128 x) {
  const __m128 y = _mm_add_ps(x, _mm_movehl_ps(x, x));             // x0 + x2, x1 + x3
  return _mm_cvtss_f32(_mm_add_ss(y, _mm_shuffle_ps(y, y, 0x55)));  // (x0 + x2) + (x1 + x3)
}

__attribute__((target("avx2,fma"))) float hsum256(__m256 v) { return hsum128(fold256(v)); }

// Lane j of the result: hsum128 of the j-th argument, summed in the same order.
__attribute__((target("avx2,fma"))) __m128 reduce4(__m128 a, __m128 b, __m128 c, __m128 d) {
  const __m128 t = _mm_add_ps(_mm_unpacklo_ps(a, b), _mm_unpackhi_ps(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const __m128 u = _mm_add_ps(_mm_unpacklo_ps(c, d), _mm_unpackhi_ps(c, d));
  return _mm_add_ps(_mm_movelh_ps(t, u), _mm_movehl_ps(u, t));
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

__attribute__((target("avx512f,avx2,fma"))) __m128 fold512(__m512 v) {
  // Through memory: gcc 12's extract and cast intrinsics trip a false -Wuninitialized in
  // their own header (as _mm512_reduce_add_ps does).
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  return fold256(_mm256_add_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8)));
}

__attribute__((target("avx512f,avx2,fma"))) float hsum512(__m512 v) { return hsum128(fold512(v)); }

CALICO_OPTIMISTIC_READER __attribute__((target("avx512f,avx2,fma"))) float l2_avx512(const float* a, const float* b, size_t dim) {
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

CALICO_OPTIMISTIC_READER __attribute__((target("avx512f,avx2,fma"))) float ip_avx512(const float* a, const float* b, size_t dim) {
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

// Points bv[0 .. 4) at the vectors v, v + 1, ... of b (stride floats apart) and returns how
// many of them are below n (at least 1: v < n). A last group of fewer than four repeats its
// last vector, so that the kernels always run four; they store only the live values.
inline size_t group_of_four(const float* b, size_t stride, size_t v, size_t n, const float* bv[4]) {
  const size_t live = std::min<size_t>(4, n - v);
  for (size_t j = 0; j < 4; ++j) bv[j] = b + (v + std::min(j, live - 1)) * stride;
  return live;
}

// The four-vector kernels: out[j] = distance(a, bv[j]) for j < live, the four vectors in one
// pass over a, each accumulated exactly as the one-vector kernel above accumulates it (same
// chunks, same accumulators, same tree), so every value is bit-identical to the one-vector
// value. bv holds four pointers (a short group repeats its last one); only live values are
// stored. Four independent streams also keep four vectors' cache misses in flight at once,
// where the one-vector kernel waits on one. The loops over the four vectors are unrolled by
// pragma: -O2 (RelWithDebInfo) does not unroll them by itself and then keeps the eight
// accumulators on the stack, a load and a store around every FMA (measured: the IVF scan at
// 0.65x of the -O3 build).
template <bool kL2>
CALICO_OPTIMISTIC_READER __attribute__((target("avx2,fma"))) inline void four_avx2(const float* a, const float* const bv[4],
                                                                                   size_t live, size_t dim, float* out) {
  __m256 s0[4], s1[4];
  #pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) s0[j] = s1[j] = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    const __m256 a0 = _mm256_loadu_ps(a + i), a1 = _mm256_loadu_ps(a + i + 8);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if constexpr (kL2) {
        const __m256 d0 = _mm256_sub_ps(a0, _mm256_loadu_ps(bv[j] + i));
        const __m256 d1 = _mm256_sub_ps(a1, _mm256_loadu_ps(bv[j] + i + 8));
        s0[j] = _mm256_fmadd_ps(d0, d0, s0[j]);
        s1[j] = _mm256_fmadd_ps(d1, d1, s1[j]);
      } else {
        s0[j] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(bv[j] + i), s0[j]);
        s1[j] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(bv[j] + i + 8), s1[j]);
      }
    }
  }
  for (; i + 8 <= dim; i += 8) {
    const __m256 a0 = _mm256_loadu_ps(a + i);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if constexpr (kL2) {
        const __m256 d = _mm256_sub_ps(a0, _mm256_loadu_ps(bv[j] + i));
        s0[j] = _mm256_fmadd_ps(d, d, s0[j]);
      } else {
        s0[j] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(bv[j] + i), s0[j]);
      }
    }
  }
  alignas(16) float r[4];
  _mm_store_ps(r, reduce4(fold256(_mm256_add_ps(s0[0], s1[0])), fold256(_mm256_add_ps(s0[1], s1[1])),
                          fold256(_mm256_add_ps(s0[2], s1[2])), fold256(_mm256_add_ps(s0[3], s1[3]))));
  for (size_t j = 0; j < live; ++j) {
    float s = r[j];
    for (size_t t = i; t < dim; ++t) {
      if constexpr (kL2) {
        float d = a[t] - bv[j][t];
        s += d * d;
      } else {
        s += a[t] * bv[j][t];
      }
    }
    out[j] = kL2 ? s : 1.0f - s;
  }
}

template <bool kL2>
CALICO_OPTIMISTIC_READER __attribute__((target("avx512f,avx2,fma"))) inline void four_avx512(const float* a,
                                                                                             const float* const bv[4],
                                                                                             size_t live, size_t dim,
                                                                                             float* out) {
  __m512 s0[4], s1[4];
  #pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) s0[j] = s1[j] = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= dim; i += 32) {
    const __m512 a0 = _mm512_loadu_ps(a + i), a1 = _mm512_loadu_ps(a + i + 16);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if constexpr (kL2) {
        const __m512 d0 = _mm512_sub_ps(a0, _mm512_loadu_ps(bv[j] + i));
        const __m512 d1 = _mm512_sub_ps(a1, _mm512_loadu_ps(bv[j] + i + 16));
        s0[j] = _mm512_fmadd_ps(d0, d0, s0[j]);
        s1[j] = _mm512_fmadd_ps(d1, d1, s1[j]);
      } else {
        s0[j] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(bv[j] + i), s0[j]);
        s1[j] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(bv[j] + i + 16), s1[j]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) s0[j] = _mm512_add_ps(s0[j], s1[j]);
  for (; i < dim; i += 16) {
    const __mmask16 m = dim - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (dim - i)) - 1);
    const __m512 a0 = _mm512_maskz_loadu_ps(m, a + i);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if constexpr (kL2) {
        const __m512 d = _mm512_sub_ps(a0, _mm512_maskz_loadu_ps(m, bv[j] + i));
        s0[j] = _mm512_fmadd_ps(d, d, s0[j]);
      } else {
        s0[j] = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(m, bv[j] + i), s0[j]);
      }
    }
  }
  alignas(16) float r[4];
  _mm_store_ps(r, reduce4(fold512(s0[0]), fold512(s0[1]), fold512(s0[2]), fold512(s0[3])));
  for (size_t j = 0; j < live; ++j) out[j] = kL2 ? r[j] : 1.0f - r[j];
}

template <bool kL2>
CALICO_OPTIMISTIC_READER inline void four_scalar(const float* a, const float* const bv[4], size_t live, size_t dim,
                                                 float* out) {
  for (size_t j = 0; j < live; ++j) out[j] = kL2 ? l2_scalar(a, bv[j], dim) : ip_scalar(a, bv[j], dim);
}

// distance_many_kernel and distance_gather_kernel of one four-vector kernel: groups of four
// vectors, found by stride or by pointer.
template <auto kFour>
CALICO_OPTIMISTIC_READER void many(const float* a, const float* b, size_t stride, size_t n, size_t dim, float* out) {
  for (size_t v = 0; v < n; v += 4) {
    const float* bv[4];
    const size_t live = group_of_four(b, stride, v, n, bv);
    kFour(a, bv, live, dim, out + v);
  }
}

template <auto kFour>
CALICO_OPTIMISTIC_READER void gather(const float* a, const float* const* b, size_t n, size_t dim, float* out) {
  for (size_t v = 0; v < n; v += 4) {
    const size_t live = std::min<size_t>(4, n - v);
    const float* bv[4];
    for (size_t j = 0; j < 4; ++j) bv[j] = b[v + std::min(j, live - 1)];
    kFour(a, bv, live, dim, out + v);
  }
}

// The best level this CPU runs, capped by CALICO_SIMD.
SimdLevel detect() {
  const std::vector<SimdLevel> levels = supported_simd_levels();
  SimdLevel best = levels.back();
  if (const char* cap = std::getenv("CALICO_SIMD")) {
    if (std::strcmp(cap, "scalar") == 0) best = SimdLevel::kScalar;
    if (std::strcmp(cap, "avx2") == 0 && best == SimdLevel::kAvx512) best = SimdLevel::kAvx2;
  }
  return best;
}

SimdLevel level() {
  static const SimdLevel l = detect();
  return l;
}

}  // namespace

std::vector<SimdLevel> supported_simd_levels() {
  __builtin_cpu_init();
  std::vector<SimdLevel> levels{SimdLevel::kScalar};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    levels.push_back(SimdLevel::kAvx2);
    // The AVX-512 kernels also use the AVX2/FMA helpers (inlined: their targets include them).
    if (__builtin_cpu_supports("avx512f")) levels.push_back(SimdLevel::kAvx512);
  }
  return levels;
}

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kScalar: break;
  }
  return "scalar";
}

DistanceFn distance_kernel_at(Metric m, SimdLevel level) {
  const bool l2 = m == Metric::kL2;
  switch (level) {
    case SimdLevel::kAvx512: return l2 ? l2_avx512 : ip_avx512;
    case SimdLevel::kAvx2: return l2 ? l2_avx2 : ip_avx2;
    case SimdLevel::kScalar: break;
  }
  return l2 ? l2_scalar : ip_scalar;
}

DistanceManyFn distance_many_kernel_at(Metric m, SimdLevel level) {
  const bool l2 = m == Metric::kL2;
  switch (level) {
    case SimdLevel::kAvx512: return l2 ? many<four_avx512<true>> : many<four_avx512<false>>;
    case SimdLevel::kAvx2: return l2 ? many<four_avx2<true>> : many<four_avx2<false>>;
    case SimdLevel::kScalar: break;
  }
  return l2 ? many<four_scalar<true>> : many<four_scalar<false>>;
}

DistanceGatherFn distance_gather_kernel_at(Metric m, SimdLevel level) {
  const bool l2 = m == Metric::kL2;
  switch (level) {
    case SimdLevel::kAvx512: return l2 ? gather<four_avx512<true>> : gather<four_avx512<false>>;
    case SimdLevel::kAvx2: return l2 ? gather<four_avx2<true>> : gather<four_avx2<false>>;
    case SimdLevel::kScalar: break;
  }
  return l2 ? gather<four_scalar<true>> : gather<four_scalar<false>>;
}

DistanceFn distance_kernel(Metric m) { return distance_kernel_at(m, level()); }

DistanceManyFn distance_many_kernel(Metric m) { return distance_many_kernel_at(m, level()); }

DistanceGatherFn distance_gather_kernel(Metric m) { return distance_gather_kernel_at(m, level()); }

std::string_view simd_level() { return simd_level_name(level()); }

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
