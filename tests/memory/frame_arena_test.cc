// Tests for memory/frame_arena: alignment, frame addressing, argument checks and huge pages.
#include "memory/frame_arena.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "calico/error.h"

namespace calico::memory {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

void expect_invalid_argument(size_t page_size, uint32_t frames) {
  try {
    FrameArena a(page_size, frames, false, false);
    ADD_FAILURE() << "FrameArena(" << page_size << ", " << frames << ") was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

TEST(FrameArena, RejectsBadArguments) {
  for (size_t ps : {size_t{0}, size_t{1}, size_t{512}, size_t{1000}, size_t{2048}, size_t{4095},
                    size_t{4097}, size_t{12288}, size_t{32768}, size_t{65536}}) {
    SCOPED_TRACE(ps);
    expect_invalid_argument(ps, 16);
  }
  expect_invalid_argument(4096, 0);
  expect_invalid_argument(16384, 0);
}

TEST(FrameArena, BaseIs2MiBAlignedAndSizeCoversAllFrames) {
  for (size_t ps : {size_t{4096}, size_t{8192}, size_t{16384}}) {
    for (uint32_t n : {1u, 2u, 511u, 512u, 1000u, 4096u}) {
      for (bool huge : {false, true}) {
        SCOPED_TRACE(testing::Message() << "page " << ps << " frames " << n << " huge " << huge);
        FrameArena a(ps, n, huge, false);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % kHugePageBytes, 0u);
        EXPECT_EQ(a.bytes() % kHugePageBytes, 0u);
        EXPECT_GE(a.bytes(), (size_t{n} + 1) * ps);
        EXPECT_LT(a.bytes(), (size_t{n} + 1) * ps + kHugePageBytes);
        EXPECT_EQ(a.page_size(), ps);
        EXPECT_EQ(a.num_frames(), n);
      }
    }
  }
}

TEST(FrameArena, FramesArePageSizeApart) {
  for (size_t ps : {size_t{4096}, size_t{8192}, size_t{16384}}) {
    SCOPED_TRACE(ps);
    constexpr uint32_t kFrames = 300;
    FrameArena a(ps, kFrames, false, false);
    EXPECT_EQ(a.frame(0), a.data());
    EXPECT_LT(a.frame(0), a.frame(1));
    for (FrameId f = 1; f <= kFrames; ++f) {
      ASSERT_EQ(a.frame(f) - a.frame(f - 1), static_cast<ptrdiff_t>(ps)) << f;
    }
    EXPECT_LE(a.frame(kFrames) + ps, a.data() + a.bytes());
  }
}

TEST(FrameArena, EveryFrameIsWritableAndDistinct) {
  for (size_t ps : {size_t{4096}, size_t{8192}, size_t{16384}}) {
    SCOPED_TRACE(ps);
    constexpr uint32_t kFrames = 257;
    FrameArena a(ps, kFrames, false, false);
    for (FrameId f = 1; f <= kFrames; ++f) {
      std::memset(a.frame(f), static_cast<int>(f & 0xFF), ps);
    }
    for (FrameId f = 1; f <= kFrames; ++f) {
      const auto want = static_cast<std::byte>(f & 0xFF);
      ASSERT_EQ(a.frame(f)[0], want) << f;
      ASSERT_EQ(a.frame(f)[ps - 1], want) << f;
    }
    // Frame 0's slot is untouched: the frames do not overlap it.
    for (size_t i = 0; i < ps; ++i) ASSERT_EQ(a.frame(0)[i], std::byte{0}) << i;
  }
}

TEST(FrameArena, NoHugePagesWhenNotRequested) {
  FrameArena a(4096, 16 * 256, /*huge_pages=*/false, /*prefault=*/true);  // 16 MiB + a frame
  EXPECT_LE(a.huge_page_bytes(), a.bytes());
  EXPECT_EQ(a.huge_page_bytes(), 0u) << "the arena is MADV_NOHUGEPAGE";
}

// The THP mode the kernel runs in: the bracketed word of the sysfs file, or "" if unknown.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "";
  auto open = line.find('[');
  auto close = line.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

TEST(FrameArena, HugePagesWhenRequestedAndPrefaulted) {
  const std::string mode = thp_mode();
  if (mode.empty()) GTEST_SKIP() << "transparent huge pages are not available on this kernel";
  if (mode == "never") {
    GTEST_SKIP() << "transparent_hugepage/enabled is [never]: the kernel gives no huge pages";
  }
  const uint32_t frames = static_cast<uint32_t>(64 * kMiB / 4096) - 1;  // exactly 64 MiB
  FrameArena a(4096, frames, /*huge_pages=*/true, /*prefault=*/true);
  ASSERT_EQ(a.bytes(), 64 * kMiB);
  const size_t huge = a.huge_page_bytes();
  EXPECT_GT(huge, 0u) << "THP mode [" << mode << "], yet no part of a prefaulted "
                      << "MADV_HUGEPAGE arena is backed by huge pages";
  EXPECT_LE(huge, a.bytes());
  EXPECT_EQ(huge % kHugePageBytes, 0u);
}

// huge_page_bytes() must describe this arena only. Linux merges adjacent private anonymous
// mappings with the same flags into one VMA, and smaps reports per VMA, so a neighbour's
// huge pages would be counted as the arena's. The arena prevents the merge with PROT_NONE
// guards: its VMA must be exactly [data(), data() + bytes()), even with an identical
// mapping requested right next to it.
TEST(FrameArena, VmaIsExactlyTheArena) {
  const uint32_t frames = static_cast<uint32_t>(16 * kMiB / 4096) - 1;  // exactly 16 MiB
  FrameArena a(4096, frames, /*huge_pages=*/true, /*prefault=*/true);
  ASSERT_EQ(a.bytes(), 16 * kMiB);
  // A same-flags neighbour as close after the arena as the kernel allows.
  void* n = mmap(a.data() + a.bytes(), kHugePageBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(n, MAP_FAILED);
  madvise(n, kHugePageBytes, MADV_HUGEPAGE);
  std::memset(n, 1, kHugePageBytes);

  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto lo = reinterpret_cast<uintptr_t>(a.data());
  bool found = false;
  while (std::getline(maps, line)) {
    uintptr_t start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    if (start <= lo && lo < end) {
      found = true;
      EXPECT_EQ(start, lo) << line;
      EXPECT_EQ(end, lo + a.bytes()) << "the arena's VMA extends past it: " << line;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_LE(a.huge_page_bytes(), a.bytes());
  munmap(n, kHugePageBytes);
}

}  // namespace
}  // namespace calico::memory
