// The integer inner products behind RaBitQ's distance estimates (vector/rabitq.h), one
// kernel per code width and instruction-set level (vector/simd_kernels.h).
//
//   binary_dot(codes, stride, n, planes, words, dot, ones)
//       1-bit codes: code i is `words` little-endian uint64 at codes + i * stride, bit k of
//       word w = dimension 64 w + k. The query is kQueryPlanes bit planes (planes[j * words
//       + w]: bit j of the 4-bit query values of dimensions 64 w .. 64 w + 63). Writes
//       dot[i] = sum_j 2^j popcount(code & plane_j) = sum_d code_d * qbar_d and
//       ones[i] = popcount(code). (RaBitQ, SIGMOD 2024, section 3.3.1: bitwise
//       decomposition of the query.)
//   packed_dot(bits, codes, stride, n, query, dims, dot)
//       bits in {2, 4}: code i packs one unsigned bits-wide value per dimension at codes +
//       i * stride, in blocks of 16 bytes that hold 16 * (8 / bits) dimensions: dimension
//       16 * s + j of a block is byte j, bits [s * bits, (s + 1) * bits). query holds dims
//       int8 values in [-127, 127]. Writes dot[i] = sum_d u_d * query_d.
// Pre (both): words >= 1, dims a positive multiple of 64; stride >= the code's bytes.
// The scalar kernels are the reference; every level returns the same integers (exact
// arithmetic: the products fit: |dot| <= dims * 15 * 127 < 2^31 for dims <= 4096).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vector/simd_kernels.h"

namespace calico::vector {

inline constexpr uint32_t kQueryPlanes = 4;  // RaBitQ's B_q for 1-bit codes

using BinaryDotFn = void (*)(const uint8_t* codes, size_t stride, size_t n, const uint64_t* planes, size_t words,
                             int32_t* dot, int32_t* ones);
using PackedDotFn = void (*)(const uint8_t* codes, size_t stride, size_t n, const int8_t* query, size_t dims,
                             int32_t* dot);

// Pre: level is in supported_simd_levels(); packed: bits is 2 or 4.
BinaryDotFn binary_dot_kernel_at(SimdLevel level);
PackedDotFn packed_dot_kernel_at(uint32_t bits, SimdLevel level);

// The level the quantisers use: distance.h's simd_level() (the best this CPU runs, capped by
// CALICO_SIMD).
SimdLevel active_simd_level();

// Packs values[0 .. dims) (each < 2^bits) into bits-wide code bytes in the layout above;
// bits in {1, 2, 4}, dims a multiple of 64. out holds dims * bits / 8 bytes.
void pack_code(const uint8_t* values, size_t dims, uint32_t bits, uint8_t* out);
// The inverse (tests).
void unpack_code(const uint8_t* code, size_t dims, uint32_t bits, uint8_t* values);

}  // namespace calico::vector
