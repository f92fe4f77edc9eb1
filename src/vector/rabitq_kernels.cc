#include "vector/rabitq_kernels.h"

#include <immintrin.h>

#include <cstring>

#include "calico/checks.h"
#include "calico/optimistic_reader.h"

namespace calico::vector {

namespace {

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The scalar references (std popcount without the popcnt instruction: a table in libgcc).
CALICO_OPTIMISTIC_READER void binary_dot_scalar(const uint8_t* codes, size_t stride, size_t n, const uint64_t* planes,
                                                size_t words, int32_t* dot, int32_t* ones) {
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * stride;
    int32_t d = 0, o = 0;
    for (size_t w = 0; w < words; ++w) {
      const uint64_t x = load_u64(c + 8 * w);
      o += __builtin_popcountll(x);
      for (uint32_t j = 0; j < kQueryPlanes; ++j) d += __builtin_popcountll(x & planes[j * words + w]) << j;
    }
    dot[i] = d;
    ones[i] = o;
  }
}

template <uint32_t kBits>
CALICO_OPTIMISTIC_READER void packed_dot_scalar(const uint8_t* codes, size_t stride, size_t n, const int8_t* query,
                                                size_t dims, int32_t* dot) {
  constexpr uint32_t kPer = 8 / kBits;           // dimensions per byte
  constexpr uint32_t kBlockDims = 16 * kPer;     // dimensions per 16-byte block
  constexpr uint32_t kMask = (1u << kBits) - 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * stride;
    int32_t d = 0;
    for (size_t b = 0; b < dims / kBlockDims; ++b) {
      for (uint32_t s = 0; s < kPer; ++s) {
        for (uint32_t j = 0; j < 16; ++j) {
          const int32_t u = (c[16 * b + j] >> (s * kBits)) & kMask;
          d += u * query[b * kBlockDims + 16 * s + j];
        }
      }
    }
    dot[i] = d;
  }
}

CALICO_OPTIMISTIC_READER __attribute__((target("avx2,fma,popcnt"))) void binary_dot_popcnt(
    const uint8_t* codes, size_t stride, size_t n, const uint64_t* planes, size_t words, int32_t* dot, int32_t* ones) {
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * stride;
    int64_t p0 = 0, p1 = 0, p2 = 0, p3 = 0, o = 0;
    for (size_t w = 0; w < words; ++w) {
      const uint64_t x = load_u64(c + 8 * w);
      o += _mm_popcnt_u64(x);
      p0 += _mm_popcnt_u64(x & planes[w]);
      p1 += _mm_popcnt_u64(x & planes[words + w]);
      p2 += _mm_popcnt_u64(x & planes[2 * words + w]);
      p3 += _mm_popcnt_u64(x & planes[3 * words + w]);
    }
    static_assert(kQueryPlanes == 4);
    dot[i] = static_cast<int32_t>(p0 + 2 * p1 + 4 * p2 + 8 * p3);
    ones[i] = static_cast<int32_t>(o);
  }
}

// AVX2: a 16-byte block widens to 32 (bits 4) or 64 (bits 2) unsigned bytes in dimension
// order; _mm256_maddubs_epi16 multiplies them by the signed query bytes (pairs of products
// fit int16: 2 * 15 * 127 < 2^15), _mm256_madd_epi16 sums pairs into int32.
template <uint32_t kBits>
CALICO_OPTIMISTIC_READER __attribute__((target("avx2,fma"))) void packed_dot_avx2(
    const uint8_t* codes, size_t stride, size_t n, const int8_t* query, size_t dims, int32_t* dot) {
  constexpr uint32_t kBlockDims = 16 * (8 / kBits);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m128i mask = _mm_set1_epi8(static_cast<char>((1u << kBits) - 1));
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * stride;
    __m256i acc = _mm256_setzero_si256();
    for (size_t b = 0; b < dims / kBlockDims; ++b) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16 * b));
      const int8_t* q = query + b * kBlockDims;
      if constexpr (kBits == 4) {
        const __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), mask), _mm_and_si128(x, mask));
        const __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones16));
      } else {
        static_assert(kBits == 2);
        const __m256i u0 = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 2), mask), _mm_and_si128(x, mask));
        const __m256i u1 = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 6), mask),
                                            _mm_and_si128(_mm_srli_epi16(x, 4), mask));
        const __m256i p0 = _mm256_maddubs_epi16(u0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
        const __m256i p1 = _mm256_maddubs_epi16(u1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32)));
        // p0 + p1 fits int16: 4 * 3 * 127 < 2^15.
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones16));
      }
    }
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    dot[i] = _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1)));
  }
}

}  // namespace

BinaryDotFn binary_dot_kernel_at(SimdLevel level) {
  // AVX-512 brings nothing to 2 to 6 words per code (dims 128 to 384): it uses the popcnt
  // kernel. Batching codes across lanes (RaBitQ's FastScan layout) is what would.
  return level == SimdLevel::kScalar ? binary_dot_scalar : binary_dot_popcnt;
}

PackedDotFn packed_dot_kernel_at(uint32_t bits, SimdLevel level) {
  CALICO_CHECK(bits == 2 || bits == 4);
  if (level == SimdLevel::kScalar) return bits == 2 ? packed_dot_scalar<2> : packed_dot_scalar<4>;
  return bits == 2 ? packed_dot_avx2<2> : packed_dot_avx2<4>;
}

SimdLevel active_simd_level() {
  const std::string_view name = simd_level();
  if (name == "avx512") return SimdLevel::kAvx512;
  if (name == "avx2") return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
}

void pack_code(const uint8_t* values, size_t dims, uint32_t bits, uint8_t* out) {
  CALICO_DCHECK(dims % 64 == 0 && (bits == 1 || bits == 2 || bits == 4));
  const size_t bytes = dims * bits / 8;
  std::memset(out, 0, bytes);
  if (bits == 1) {
    for (size_t d = 0; d < dims; ++d) out[d / 8] |= uint8_t((values[d] & 1u) << (d % 8));
    return;
  }
  const uint32_t per = 8 / bits, block_dims = 16 * per, mask = (1u << bits) - 1;
  for (size_t d = 0; d < dims; ++d) {
    const size_t b = d / block_dims, r = d % block_dims, s = r / 16, j = r % 16;
    CALICO_DCHECK(values[d] <= mask);
    out[16 * b + j] |= uint8_t((values[d] & mask) << (s * bits));
  }
}

void unpack_code(const uint8_t* code, size_t dims, uint32_t bits, uint8_t* values) {
  if (bits == 1) {
    for (size_t d = 0; d < dims; ++d) values[d] = (code[d / 8] >> (d % 8)) & 1u;
    return;
  }
  const uint32_t per = 8 / bits, block_dims = 16 * per, mask = (1u << bits) - 1;
  for (size_t d = 0; d < dims; ++d) {
    const size_t b = d / block_dims, r = d % block_dims, s = r / 16, j = r % 16;
    values[d] = (code[16 * b + j] >> (s * bits)) & mask;
  }
}

}  // namespace calico::vector
