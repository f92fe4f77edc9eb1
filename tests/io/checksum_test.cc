// Tests for io/checksum: CRC32C known vectors, hardware == software, and the page trailer
// (stamp_page / verify_page) for 4, 8 and 16 KB pages.
#include "io/checksum.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace calico::io {
namespace {

constexpr uint64_t kSeed = 0xC0FFEE;  // fixed so a failure replays

uint32_t crc_of(const std::vector<uint8_t>& v) { return crc32c(v.data(), v.size()); }

TEST(Crc32c, KnownVectors) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(crc_of(std::vector<uint8_t>(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(crc_of(std::vector<uint8_t>(32, 0xFF)), 0x62A8AB43u);
  // RFC 3720 B.4: 32 bytes ascending and descending.
  std::vector<uint8_t> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc_of(up), 0x46DD794Eu);
  EXPECT_EQ(crc_of(down), 0x113FDB5Cu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, SoftwareKnownVectors) {
  const std::string check = "123456789";
  EXPECT_EQ(detail::crc32c_software(check.data(), check.size(), 0), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(detail::crc32c_software(zeros.data(), zeros.size(), 0), 0x8A9136AAu);
  EXPECT_EQ(detail::crc32c_software(ones.data(), ones.size(), 0), 0x62A8AB43u);
}

TEST(Crc32c, HardwareKnownVectors) {
  if (!detail::has_hardware_crc32c()) GTEST_SKIP() << "CPU has no SSE4.2";
  const std::string check = "123456789";
  EXPECT_EQ(detail::crc32c_hardware(check.data(), check.size(), 0), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(detail::crc32c_hardware(zeros.data(), zeros.size(), 0), 0x8A9136AAu);
  EXPECT_EQ(detail::crc32c_hardware(ones.data(), ones.size(), 0), 0x62A8AB43u);
}

TEST(Crc32c, HardwareMatchesSoftwareOnRandomBuffers) {
  if (!detail::has_hardware_crc32c()) GTEST_SKIP() << "CPU has no SSE4.2";
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::mt19937_64 rng(kSeed);
  std::vector<uint8_t> buf(20000 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 130; ++n) lengths.push_back(n);
  for (size_t n : {255, 256, 257, 1000, 4092, 4096, 8188, 16380, 20000}) lengths.push_back(n);
  for (size_t align = 0; align < 16; ++align) {
    for (size_t n : lengths) {
      const uint8_t* p = buf.data() + align;
      const uint32_t seed_crc = static_cast<uint32_t>(rng());
      ASSERT_EQ(detail::crc32c_hardware(p, n, 0), detail::crc32c_software(p, n, 0))
          << "align " << align << " length " << n;
      ASSERT_EQ(detail::crc32c_hardware(p, n, seed_crc), detail::crc32c_software(p, n, seed_crc))
          << "align " << align << " length " << n << " crc " << seed_crc;
      ASSERT_EQ(crc32c(p, n), detail::crc32c_software(p, n, 0));
    }
  }
}

TEST(Crc32c, ContinuationEqualsWholeBuffer) {
  std::mt19937_64 rng(kSeed + 1);
  std::vector<uint8_t> buf(5000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const uint32_t whole = crc32c(buf.data(), buf.size());
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{4096},
                       buf.size()}) {
    const uint32_t first = crc32c(buf.data(), split);
    EXPECT_EQ(crc32c(buf.data() + split, buf.size() - split, first), whole) << "split " << split;
    const uint32_t sw_first = detail::crc32c_software(buf.data(), split, 0);
    EXPECT_EQ(detail::crc32c_software(buf.data() + split, buf.size() - split, sw_first), whole);
  }
}

// A page-aligned buffer filled with seeded random bytes.
struct Page {
  explicit Page(size_t size, uint64_t seed) : bytes(size) {
    std::mt19937_64 rng(seed);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
  }
  std::byte* data() { return bytes.data(); }
  std::vector<std::byte> bytes;
};

uint32_t load_le32(const std::byte* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

class PageChecksum : public ::testing::TestWithParam<size_t> {};

TEST_P(PageChecksum, StampThenVerifyIsOk) {
  const size_t ps = GetParam();
  Page page(ps, kSeed);
  const PageId pid(3, 42);
  stamp_page(page.data(), ps, pid);
  EXPECT_EQ(verify_page(page.data(), ps, pid), PageCheck::kOk);
}

TEST_P(PageChecksum, TrailerIsLittleEndianOnDiskFormat) {
  const size_t ps = GetParam();
  Page page(ps, kSeed + 2);
  const PageId pid(0x01020304u, 0x05060708u);
  stamp_page(page.data(), ps, pid);
  const std::byte* t = page.data() + ps - kTrailerBytes;
  const uint8_t id_le[8] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<uint8_t>(t[i]), id_le[i]) << "byte " << i;
  EXPECT_EQ(std::memcmp(t + 8, "CAL1", 4), 0);
  EXPECT_EQ(load_le32(t + 12), crc32c(page.data(), ps - 4));
}

TEST_P(PageChecksum, StampedZeroPayloadIsNotAZeroPage) {
  const size_t ps = GetParam();
  std::vector<std::byte> page(ps);
  stamp_page(page.data(), ps, PageId(1, 0));
  EXPECT_EQ(verify_page(page.data(), ps, PageId(1, 0)), PageCheck::kOk);
}

TEST_P(PageChecksum, AllZeroBlockIsZeroPage) {
  const size_t ps = GetParam();
  std::vector<std::byte> page(ps);
  EXPECT_EQ(verify_page(page.data(), ps, PageId(1, 7)), PageCheck::kZeroPage);
}

TEST_P(PageChecksum, ZeroBlockWithOneNonZeroByteIsMismatch) {
  const size_t ps = GetParam();
  for (size_t pos : {size_t{0}, ps / 2, ps - kTrailerBytes, ps - 5, ps - 1}) {
    std::vector<std::byte> page(ps);
    page[pos] = std::byte{1};
    EXPECT_EQ(verify_page(page.data(), ps, PageId(1, 7)), PageCheck::kMismatch) << "pos " << pos;
  }
}

TEST_P(PageChecksum, WrongPageIdIsMismatch) {
  const size_t ps = GetParam();
  Page page(ps, kSeed + 3);
  stamp_page(page.data(), ps, PageId(5, 9));
  EXPECT_EQ(verify_page(page.data(), ps, PageId(5, 10)), PageCheck::kMismatch);
  EXPECT_EQ(verify_page(page.data(), ps, PageId(6, 9)), PageCheck::kMismatch);
  EXPECT_EQ(verify_page(page.data(), ps, PageId{}), PageCheck::kMismatch);
  EXPECT_EQ(verify_page(page.data(), ps, PageId(5, 9)), PageCheck::kOk);
}

TEST_P(PageChecksum, FlipsAtRegionBoundariesAreMismatch) {
  const size_t ps = GetParam();
  Page page(ps, kSeed + 4);
  const PageId pid(2, 1);
  stamp_page(page.data(), ps, pid);
  for (size_t pos : {size_t{0}, size_t{1}, ps / 2, ps - kTrailerBytes - 1, ps - kTrailerBytes,
                     ps - 9, ps - 8, ps - 5, ps - 4, ps - 1}) {
    page.bytes[pos] ^= std::byte{0x10};
    EXPECT_EQ(verify_page(page.data(), ps, pid), PageCheck::kMismatch) << "pos " << pos;
    page.bytes[pos] ^= std::byte{0x10};
  }
  EXPECT_EQ(verify_page(page.data(), ps, pid), PageCheck::kOk);
}

INSTANTIATE_TEST_SUITE_P(PageSizes, PageChecksum, ::testing::Values(4096, 8192, 16384),
                         [](const auto& info) { return std::to_string(info.param); });

TEST(PageChecksum4K, EverySingleByteFlipIsMismatch) {
  constexpr size_t ps = 4096;
  Page page(ps, kSeed + 5);
  const PageId pid(9, 77);
  stamp_page(page.data(), ps, pid);
  for (size_t pos = 0; pos < ps; ++pos) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      page.bytes[pos] ^= std::byte{mask};
      ASSERT_EQ(verify_page(page.data(), ps, pid), PageCheck::kMismatch)
          << "pos " << pos << " mask " << int{mask};
      page.bytes[pos] ^= std::byte{mask};
    }
  }
  EXPECT_EQ(verify_page(page.data(), ps, pid), PageCheck::kOk);
}

TEST(PageChecksumDeathTest, InvalidPageSizeIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<std::byte> page(8192);
  EXPECT_DEATH(stamp_page(page.data(), 1000, PageId(1, 1)), "invariant violated");
  EXPECT_DEATH(verify_page(page.data(), 2048, PageId(1, 1)), "invariant violated");
  EXPECT_DEATH(verify_page(page.data(), 6144, PageId(1, 1)), "invariant violated");
}

}  // namespace
}  // namespace calico::io
