// Tests for memory/virtual_region: reservation, zero reads, punch, reset, measurement and moves.
#include "memory/virtual_region.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "calico/error.h"

namespace calico::memory {
namespace {

constexpr size_t kPage = kOsPageBytes;

void expect_invalid_argument(size_t bytes) {
  try {
    VirtualRegion r = VirtualRegion::reserve(bytes);
    ADD_FAILURE() << "reserve(" << bytes << ") succeeded with size " << r.size();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

// True when [p, p + len) is mapped in this process (mincore fails with ENOMEM otherwise).
bool is_mapped(const void* p, size_t len) {
  unsigned char vec[16];
  return mincore(const_cast<void*>(p), len, vec) == 0 || errno != ENOMEM;
}

bool all_zero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

void fill_pages(std::byte* p, size_t pages, uint8_t seed) {
  for (size_t i = 0; i < pages; ++i) std::memset(p + i * kPage, seed + i, kPage);
}

TEST(VirtualRegion, ReserveRoundsUpTo4K) {
  EXPECT_EQ(VirtualRegion::reserve(1).size(), kPage);
  EXPECT_EQ(VirtualRegion::reserve(kPage - 1).size(), kPage);
  EXPECT_EQ(VirtualRegion::reserve(kPage).size(), kPage);
  EXPECT_EQ(VirtualRegion::reserve(kPage + 1).size(), 2 * kPage);
  EXPECT_EQ(VirtualRegion::reserve(10 * kPage + 17).size(), 11 * kPage);
  VirtualRegion r = VirtualRegion::reserve(12345);
  ASSERT_NE(r.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.data()) % kPage, 0u);
}

TEST(VirtualRegion, ReserveZeroThrows) { expect_invalid_argument(0); }

TEST(VirtualRegion, ImpossibleReservationsThrow) {
  expect_invalid_argument(size_t{1} << 62);
  expect_invalid_argument(~size_t{0});  // rounding up to 4 KB overflows
}

TEST(VirtualRegion, DefaultIsEmpty) {
  VirtualRegion r;
  EXPECT_EQ(r.data(), nullptr);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.resident_bytes(0, kPage), 0u);
  EXPECT_EQ(r.private_bytes(0, kPage), 0u);
}

TEST(VirtualRegion, ReadsZeroWithoutPrivateMemory) {
  constexpr size_t kBytes = 4 << 20;
  VirtualRegion r = VirtualRegion::reserve(kBytes);
  EXPECT_EQ(r.private_bytes(0, kBytes), 0u);
  EXPECT_EQ(r.resident_bytes(0, kBytes), 0u) << "nothing touched yet";
  EXPECT_TRUE(all_zero(r.data(), kBytes));
  EXPECT_EQ(r.private_bytes(0, kBytes), 0u) << "reads must map only the shared zero page";
  EXPECT_GE(r.resident_bytes(0, kBytes), r.private_bytes(0, kBytes));
  EXPECT_LE(r.resident_bytes(0, kBytes), kBytes);
}

TEST(VirtualRegion, WritesCostOnePageEach) {
  constexpr size_t kPages = 64;
  VirtualRegion r = VirtualRegion::reserve(kPages * kPage);
  r.data()[0] = std::byte{1};
  r.data()[kPage - 1] = std::byte{1};
  EXPECT_EQ(r.private_bytes(0, r.size()), kPage);
  r.data()[10 * kPage + 5] = std::byte{1};
  r.data()[63 * kPage] = std::byte{1};
  EXPECT_EQ(r.private_bytes(0, r.size()), 3 * kPage);
  EXPECT_GE(r.resident_bytes(0, r.size()), 3 * kPage);
  // Sub-ranges and clamping.
  EXPECT_EQ(r.private_bytes(kPage, 9 * kPage), 0u) << "pages 1..9";
  EXPECT_EQ(r.private_bytes(kPage, 9 * kPage + 1), kPage) << "len rounds up to whole pages";
  EXPECT_EQ(r.private_bytes(10 * kPage, size_t{1} << 40), 2 * kPage) << "len clamps to the end";
  EXPECT_EQ(r.private_bytes(r.size(), kPage), 0u);
  EXPECT_EQ(r.private_bytes(0, 0), 0u);
  EXPECT_EQ(r.resident_bytes(r.size(), kPage), 0u);
  EXPECT_EQ(r.resident_bytes(0, 0), 0u);
}

TEST(VirtualRegion, PunchReturnsMemoryAndZeroes) {
  constexpr size_t kPages = 16;
  VirtualRegion r = VirtualRegion::reserve(kPages * kPage);
  fill_pages(r.data(), kPages, 1);
  ASSERT_EQ(r.private_bytes(0, r.size()), kPages * kPage);

  r.punch(4 * kPage, 4 * kPage);
  EXPECT_EQ(r.private_bytes(0, r.size()), (kPages - 4) * kPage);
  EXPECT_EQ(r.private_bytes(4 * kPage, 4 * kPage), 0u);
  EXPECT_TRUE(all_zero(r.data() + 4 * kPage, 4 * kPage));
  // Neighbours keep their bytes.
  for (size_t i = 0; i < kPages; ++i) {
    if (i >= 4 && i < 8) continue;
    EXPECT_EQ(r.data()[i * kPage], std::byte(1 + i)) << i;
    EXPECT_EQ(r.data()[i * kPage + kPage - 1], std::byte(1 + i)) << i;
  }
  // Reading the punched range costs nothing; the range can be written again.
  EXPECT_EQ(r.private_bytes(0, r.size()), (kPages - 4) * kPage);
  r.data()[5 * kPage] = std::byte{9};
  EXPECT_EQ(r.private_bytes(0, r.size()), (kPages - 3) * kPage);

  // Punching the first and last pages.
  r.punch(0, kPage);
  r.punch((kPages - 1) * kPage, kPage);
  EXPECT_EQ(r.private_bytes(0, r.size()), (kPages - 5) * kPage);
  EXPECT_TRUE(all_zero(r.data(), kPage));
  EXPECT_TRUE(all_zero(r.data() + (kPages - 1) * kPage, kPage));
}

TEST(VirtualRegion, ResetKeepsTheAddressAndZeroes) {
  constexpr size_t kPages = 32;
  VirtualRegion r = VirtualRegion::reserve(kPages * kPage);
  std::byte* const base = r.data();
  fill_pages(base, kPages, 0x40);
  ASSERT_EQ(r.private_bytes(0, r.size()), kPages * kPage);
  r.reset();
  EXPECT_EQ(r.data(), base);
  EXPECT_EQ(r.size(), kPages * kPage);
  EXPECT_EQ(r.private_bytes(0, r.size()), 0u);
  EXPECT_EQ(r.resident_bytes(0, r.size()), 0u) << "reset replaces the mapping";
  EXPECT_TRUE(all_zero(base, kPages * kPage));
  EXPECT_EQ(r.private_bytes(0, r.size()), 0u);
  base[3 * kPage] = std::byte{7};
  EXPECT_EQ(r.private_bytes(0, r.size()), kPage);
  EXPECT_EQ(base[3 * kPage], std::byte{7});
}

TEST(VirtualRegion, MoveConstructionTransfersOwnership) {
  VirtualRegion a = VirtualRegion::reserve(3 * kPage);
  std::byte* const p = a.data();
  p[kPage] = std::byte{0x5A};
  VirtualRegion b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 3 * kPage);
  EXPECT_EQ(b.data()[kPage], std::byte{0x5A});
}

TEST(VirtualRegion, MoveAssignmentReleasesTheOldMapping) {
  VirtualRegion a = VirtualRegion::reserve(2 * kPage);
  VirtualRegion b = VirtualRegion::reserve(5 * kPage);
  std::byte* const pa = a.data();
  std::byte* const pb = b.data();
  pa[0] = std::byte{1};
  pb[0] = std::byte{2};
  b = std::move(a);
  EXPECT_EQ(b.data(), pa);
  EXPECT_EQ(b.size(), 2 * kPage);
  EXPECT_EQ(b.data()[0], std::byte{1});
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);
  EXPECT_FALSE(is_mapped(pb, 5 * kPage)) << "b's old region must be unmapped";
  EXPECT_TRUE(is_mapped(pa, 2 * kPage));

  // Self-move keeps the region.
  VirtualRegion& alias = b;
  b = std::move(alias);
  EXPECT_EQ(b.data(), pa);
  EXPECT_EQ(b.size(), 2 * kPage);
  EXPECT_EQ(b.data()[0], std::byte{1});
}

TEST(VirtualRegion, DestructorUnmaps) {
  std::byte* p;
  {
    VirtualRegion r = VirtualRegion::reserve(8 * kPage);
    p = r.data();
    ASSERT_TRUE(is_mapped(p, 8 * kPage));
  }
  EXPECT_FALSE(is_mapped(p, 8 * kPage));
}

}  // namespace
}  // namespace calico::memory
