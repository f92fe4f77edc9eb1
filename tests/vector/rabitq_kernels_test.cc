// The RaBitQ integer kernels (vector/rabitq_kernels.h): pack/unpack round trip for 1, 2 and
// 4 bits; every level this CPU runs equals the scalar reference and a plain loop over the
// unpacked values, for padded code strides and counts that are not multiples of anything.
#include "vector/rabitq_kernels.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace calico::vector {
namespace {

TEST(RabitqKernels, PackUnpackRoundTrip) {
  std::mt19937_64 rng(3);
  for (uint32_t bits : {1u, 2u, 4u}) {
    for (size_t dims : {64, 128, 192, 384}) {
      std::vector<uint8_t> v(dims), back(dims), code(dims * bits / 8);
      for (uint8_t& x : v) x = rng() % (1u << bits);
      pack_code(v.data(), dims, bits, code.data());
      unpack_code(code.data(), dims, bits, back.data());
      EXPECT_EQ(v, back) << bits << " bits, dims " << dims;
    }
  }
}

TEST(RabitqKernels, BinaryDotMatchesPlainLoopAtEveryLevel) {
  std::mt19937_64 rng(4);
  for (size_t dims : {64, 128, 384}) {
    const size_t words = dims / 64, stride = dims / 8 + 12, n = 37;
    std::vector<uint8_t> codes(n * stride), values(n * dims);
    for (size_t i = 0; i < n; ++i) {
      for (size_t d = 0; d < dims; ++d) values[i * dims + d] = rng() & 1;
      pack_code(values.data() + i * dims, dims, 1, codes.data() + i * stride);
    }
    std::vector<uint32_t> q(dims);
    std::vector<uint64_t> planes(kQueryPlanes * words, 0);
    for (size_t d = 0; d < dims; ++d) {
      q[d] = rng() % 16;
      for (uint32_t j = 0; j < kQueryPlanes; ++j) planes[j * words + d / 64] |= uint64_t((q[d] >> j) & 1) << (d % 64);
    }
    for (SimdLevel level : supported_simd_levels()) {
      std::vector<int32_t> dot(n), ones(n);
      binary_dot_kernel_at(level)(codes.data(), stride, n, planes.data(), words, dot.data(), ones.data());
      for (size_t i = 0; i < n; ++i) {
        int32_t want = 0, want_ones = 0;
        for (size_t d = 0; d < dims; ++d) {
          want += values[i * dims + d] * int32_t(q[d]);
          want_ones += values[i * dims + d];
        }
        ASSERT_EQ(dot[i], want) << simd_level_name(level) << " dims " << dims << " code " << i;
        ASSERT_EQ(ones[i], want_ones);
      }
    }
  }
}

TEST(RabitqKernels, PackedDotMatchesPlainLoopAtEveryLevel) {
  std::mt19937_64 rng(5);
  for (uint32_t bits : {2u, 4u}) {
    for (size_t dims : {64, 128, 192, 384}) {
      const size_t stride = dims * bits / 8 + 12, n = 29;
      std::vector<uint8_t> codes(n * stride), values(n * dims);
      for (size_t i = 0; i < n; ++i) {
        for (size_t d = 0; d < dims; ++d) values[i * dims + d] = rng() % (1u << bits);
        pack_code(values.data() + i * dims, dims, bits, codes.data() + i * stride);
      }
      std::vector<int8_t> q(dims);
      for (size_t d = 0; d < dims; ++d) q[d] = static_cast<int8_t>(int(rng() % 255) - 127);
      q[0] = 127;
      q[1] = -127;
      for (SimdLevel level : supported_simd_levels()) {
        std::vector<int32_t> dot(n);
        packed_dot_kernel_at(bits, level)(codes.data(), stride, n, q.data(), dims, dot.data());
        for (size_t i = 0; i < n; ++i) {
          int32_t want = 0;
          for (size_t d = 0; d < dims; ++d) want += values[i * dims + d] * int32_t(q[d]);
          ASSERT_EQ(dot[i], want) << simd_level_name(level) << " bits " << bits << " dims " << dims << " code " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace calico::vector
