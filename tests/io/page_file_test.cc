// Tests for io/page_file: create/open/remove, block round trips for 4/8/16 KB pages, error
// codes (kIoError, kShortRead, kInvalidArgument) and fault injection.
#include "io/page_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "calico/error.h"
#include "support/io_buffers.h"
#include "support/test_util.h"

namespace calico::io {
namespace {

using testing::aligned_buf;
using testing::AlignedBuf;
using testing::fill;
using testing::TempDir;

// Runs `fn`, expecting a calico::Error with `code`; returns its message.
template <class Fn>
std::string expect_error(ErrorCode code, Fn&& fn) {
  return testing::expect_error(code, std::forward<Fn>(fn)).what();
}

// Records every call; turns the result of one chosen (is_write, offset) into `replacement`.
class TestInjector : public FaultInjector {
 public:
  TestInjector(bool is_write, uint64_t offset, int replacement)
      : is_write_(is_write), offset_(offset), replacement_(replacement) {}
  int on_complete(bool is_write, int fd, uint64_t offset, uint32_t len, int result) override {
    calls.fetch_add(1);
    last_fd = fd;
    last_len = len;
    last_result = result;
    if (is_write == is_write_ && offset == offset_) return replacement_;
    return result;
  }
  std::atomic<int> calls{0};
  std::atomic<int> last_fd{-1};
  std::atomic<uint32_t> last_len{0};
  std::atomic<int> last_result{0};

 private:
  bool is_write_;
  uint64_t offset_;
  int replacement_;
};

TEST(PageFile, CreateOpenRemove) {
  TempDir dir;
  const std::string path = dir.sub("space_1");
  {
    PageFile f = PageFile::open(path, 4096, /*create=*/true);
    EXPECT_GE(f.fd(), 0);
    EXPECT_EQ(f.path(), path);
    EXPECT_EQ(f.page_size(), 4096u);
    EXPECT_EQ(f.size_blocks(), 0u);
    EXPECT_EQ(f.faults(), nullptr);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  {
    PageFile f = PageFile::open(path, 4096, /*create=*/false);
    EXPECT_EQ(f.size_blocks(), 0u);
  }
  PageFile::remove(path);
  EXPECT_FALSE(std::filesystem::exists(path));
  const std::string msg = expect_error(ErrorCode::kIoError, [&] { PageFile::remove(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(PageFile, CreateOfExistingFileFails) {
  TempDir dir;
  const std::string path = dir.sub("f");
  { PageFile f = PageFile::open(path, 4096, true); }
  const std::string msg =
      expect_error(ErrorCode::kIoError, [&] { PageFile::open(path, 4096, true); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EEXIST)), std::string::npos) << msg;
}

TEST(PageFile, OpenOfMissingFileFails) {
  TempDir dir;
  const std::string path = dir.sub("missing");
  const std::string msg =
      expect_error(ErrorCode::kIoError, [&] { PageFile::open(path, 4096, false); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOENT)), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(PageFile, InvalidPageSizeIsInvalidArgument) {
  TempDir dir;
  const std::string path = dir.sub("f");
  for (size_t ps : {size_t{0}, size_t{512}, size_t{2048}, size_t{4097}, size_t{12288},
                    size_t{32768}}) {
    expect_error(ErrorCode::kInvalidArgument, [&] { PageFile::open(path, ps, true); });
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

// procfs refuses O_DIRECT with EINVAL, which exercises the buffered fallback on a real
// kernel. The file is only opened and read (writing /proc/self/comm would rename the thread).
TEST(PageFile, FallsBackToBufferedIoWhenODirectIsRefused) {
  const std::string path = "/proc/self/comm";
  ::testing::internal::CaptureStderr();
  PageFile f;
  try {
    f = PageFile::open(path, 4096, /*create=*/false);
  } catch (const Error& e) {
    ::testing::internal::GetCapturedStderr();
    GTEST_SKIP() << "cannot open " << path << ": " << e.what();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  if (f.direct()) GTEST_SKIP() << "this kernel accepts O_DIRECT on procfs";
  EXPECT_EQ(err, "calico: O_DIRECT not supported for " + path + "; using buffered I/O\n");
  auto buf = aligned_buf(4096);
  // The file is a few bytes long: a page read of it is short.
  expect_error(ErrorCode::kShortRead, [&] { f.read_block(0, buf.get()); });
}

TEST(PageFile, DirectIoOnTmpQuietly) {
  TempDir dir;
  ::testing::internal::CaptureStderr();
  PageFile f = PageFile::open(dir.sub("f"), 4096, true);
  const std::string err = ::testing::internal::GetCapturedStderr();
  if (f.direct()) {
    EXPECT_EQ(err, "");
  } else {
    EXPECT_NE(err.find("O_DIRECT not supported"), std::string::npos);
  }
}

class PageFileSizes : public ::testing::TestWithParam<size_t> {};

TEST_P(PageFileSizes, WriteThenReadBack) {
  const size_t ps = GetParam();
  TempDir dir;
  const std::string path = dir.sub("f");
  PageFile f = PageFile::open(path, ps, true);
  EXPECT_EQ(f.page_size(), ps);
  constexpr BlockId kBlocks = 8;
  auto buf = aligned_buf(ps);
  for (BlockId b = 0; b < kBlocks; ++b) {
    fill(buf.get(), ps, b);
    f.write_block(b, buf.get());
    EXPECT_EQ(f.size_blocks(), b + 1u);
  }
  auto got = aligned_buf(ps);
  auto want = aligned_buf(ps);
  for (BlockId b : {5u, 0u, 7u, 3u, 1u, 2u, 6u, 4u}) {
    f.read_block(b, got.get());
    fill(want.get(), ps, b);
    EXPECT_EQ(std::memcmp(got.get(), want.get(), ps), 0) << "block " << b;
  }
  // Overwrite in place: size stays, content changes.
  fill(buf.get(), ps, 1000);
  f.write_block(3, buf.get());
  EXPECT_EQ(f.size_blocks(), kBlocks);
  f.read_block(3, got.get());
  EXPECT_EQ(std::memcmp(got.get(), buf.get(), ps), 0);
  f.sync();
}

TEST_P(PageFileSizes, SparseWriteGrowsToBlockAndHoleReadsZero) {
  const size_t ps = GetParam();
  TempDir dir;
  PageFile f = PageFile::open(dir.sub("f"), ps, true);
  auto buf = aligned_buf(ps);
  fill(buf.get(), ps, 9);
  f.write_block(9, buf.get());
  EXPECT_EQ(f.size_blocks(), 10u);
  auto got = aligned_buf(ps);
  std::memset(got.get(), 0xAB, ps);
  f.read_block(4, got.get());
  for (size_t i = 0; i < ps; ++i) ASSERT_EQ(got.get()[i], std::byte{0}) << "byte " << i;
}

TEST_P(PageFileSizes, DataSurvivesReopen) {
  const size_t ps = GetParam();
  TempDir dir;
  const std::string path = dir.sub("f");
  auto buf = aligned_buf(ps);
  {
    PageFile f = PageFile::open(path, ps, true);
    for (BlockId b = 0; b < 3; ++b) {
      fill(buf.get(), ps, b + 50);
      f.write_block(b, buf.get());
    }
    f.sync();
  }
  PageFile f = PageFile::open(path, ps, false);
  EXPECT_EQ(f.size_blocks(), 3u);
  auto want = aligned_buf(ps);
  for (BlockId b = 0; b < 3; ++b) {
    f.read_block(b, buf.get());
    fill(want.get(), ps, b + 50);
    EXPECT_EQ(std::memcmp(buf.get(), want.get(), ps), 0) << "block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(PageSizes, PageFileSizes, ::testing::Values(4096, 8192, 16384),
                         [](const auto& info) { return std::to_string(info.param); });

TEST(PageFile, ReadPastEofIsShortReadNamingTheBlock) {
  TempDir dir;
  PageFile f = PageFile::open(dir.sub("f"), 4096, true);
  auto buf = aligned_buf(4096);
  f.write_block(0, buf.get());
  const std::string msg = expect_error(ErrorCode::kShortRead, [&] { f.read_block(5, buf.get()); });
  EXPECT_NE(msg.find("block 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0 of 4096"), std::string::npos) << msg;
}

TEST(PageFile, InjectedEioTurnsReadIntoIoError) {
  TempDir dir;
  TestInjector faults(/*is_write=*/false, /*offset=*/2 * 8192, -EIO);
  PageFile f = PageFile::open(dir.sub("f"), 8192, true, &faults);
  EXPECT_EQ(f.faults(), &faults);
  auto buf = aligned_buf(8192);
  for (BlockId b = 0; b < 4; ++b) f.write_block(b, buf.get());
  EXPECT_EQ(faults.calls.load(), 4);
  f.read_block(1, buf.get());  // another offset: untouched
  EXPECT_EQ(faults.calls.load(), 5);
  EXPECT_EQ(faults.last_fd.load(), f.fd());
  EXPECT_EQ(faults.last_len.load(), 8192u);
  EXPECT_EQ(faults.last_result.load(), 8192);
  const std::string msg = expect_error(ErrorCode::kIoError, [&] { f.read_block(2, buf.get()); });
  EXPECT_NE(msg.find(std::strerror(EIO)), std::string::npos) << msg;
  EXPECT_NE(msg.find("block 2"), std::string::npos) << msg;
  EXPECT_EQ(faults.last_result.load(), 8192);  // the injector saw the good OS result
}

TEST(PageFile, InjectedShortCountTurnsReadIntoShortRead) {
  TempDir dir;
  TestInjector faults(false, 0, 2048);
  PageFile f = PageFile::open(dir.sub("f"), 4096, true, &faults);
  auto buf = aligned_buf(4096);
  f.write_block(0, buf.get());
  const std::string msg = expect_error(ErrorCode::kShortRead, [&] { f.read_block(0, buf.get()); });
  EXPECT_NE(msg.find("block 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2048 of 4096"), std::string::npos) << msg;
}

TEST(PageFile, InjectedWriteFaults) {
  TempDir dir;
  TestInjector eio(true, 4096, -ENOSPC);
  PageFile f = PageFile::open(dir.sub("f"), 4096, true, &eio);
  auto buf = aligned_buf(4096);
  f.write_block(0, buf.get());
  const std::string msg = expect_error(ErrorCode::kIoError, [&] { f.write_block(1, buf.get()); });
  EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;

  TestInjector torn(true, 0, 512);
  PageFile g = PageFile::open(dir.sub("g"), 4096, true, &torn);
  expect_error(ErrorCode::kShortRead, [&] { g.write_block(0, buf.get()); });
}

// The hooks for the failures no completion result can express: a torn write (only the
// first half reaches the file), ENOSPC on extension, a failing fdatasync.
class HookInjector : public FaultInjector {
 public:
  std::atomic<uint32_t> write_bytes{0};  // 0: whole pages
  std::atomic<int> extend_error{0};
  std::atomic<int> sync_error{0};
  std::atomic<int> syncs{0};
  uint32_t transfer_bytes(bool is_write, int, uint64_t, uint32_t len) override {
    return is_write && write_bytes.load() != 0 ? write_bytes.load() : len;
  }
  int on_complete(bool, int, uint64_t, uint32_t len, int result) override {
    return result == static_cast<int>(write_bytes.load()) ? static_cast<int>(len) : result;  // torn: "done"
  }
  int on_extend(int, uint64_t) override { return extend_error.load(); }
  int on_sync(int, int result) override {
    ++syncs;
    return sync_error.load() != 0 ? sync_error.load() : result;
  }
};

TEST(PageFile, TornWriteLeavesTheFirstHalfOnly) {
  TempDir dir;
  HookInjector hooks;
  PageFile f = PageFile::open(dir.sub("f"), 4096, true, &hooks);
  auto old_page = aligned_buf(4096);
  auto new_page = aligned_buf(4096);
  fill(old_page.get(), 4096, 1);
  fill(new_page.get(), 4096, 2);
  f.write_block(0, old_page.get());
  hooks.write_bytes = 2048;
  f.write_block(0, new_page.get());  // reported whole, as a torn write after power loss is
  hooks.write_bytes = 0;
  auto back = aligned_buf(4096);
  f.read_block(0, back.get());
  EXPECT_EQ(std::memcmp(back.get(), new_page.get(), 2048), 0);
  EXPECT_EQ(std::memcmp(back.get() + 2048, old_page.get() + 2048, 2048), 0);
}

TEST(PageFile, InjectedExtendAndSyncFailuresAreIoErrorsNamingTheFile) {
  TempDir dir;
  HookInjector hooks;
  const std::string path = dir.sub("f");
  PageFile f = PageFile::open(path, 4096, true, &hooks);
  hooks.extend_error = -ENOSPC;
  std::string msg = expect_error(ErrorCode::kIoError, [&] { f.extend_blocks(8); });
  EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(f.size_blocks(), 0u) << "a failed extension changes nothing";
  hooks.extend_error = 0;
  f.extend_blocks(8);
  EXPECT_EQ(f.size_blocks(), 8u);

  f.sync();
  hooks.sync_error = -EIO;
  msg = expect_error(ErrorCode::kIoError, [&] { f.sync(); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(hooks.syncs.load(), 2);
}

TEST(PageFile, ResultLongerThanAPageIsAnErrorNotAnAbort) {
  TempDir dir;
  TestInjector liar(false, 0, 8192);
  PageFile f = PageFile::open(dir.sub("f"), 4096, true, &liar);
  auto buf = aligned_buf(4096);
  f.write_block(0, buf.get());
  expect_error(ErrorCode::kIoError, [&] { f.read_block(0, buf.get()); });
}

TEST(PageFile, MoveTransfersTheFd) {
  TempDir dir;
  PageFile a = PageFile::open(dir.sub("a"), 4096, true);
  const int fd = a.fd();
  PageFile b(std::move(a));
  EXPECT_EQ(a.fd(), -1);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(b.fd(), fd);
  EXPECT_EQ(b.path(), dir.sub("a"));
  auto buf = aligned_buf(4096);
  b.write_block(0, buf.get());

  PageFile c = PageFile::open(dir.sub("c"), 4096, true);
  const int old_c_fd = c.fd();
  c = std::move(b);
  EXPECT_EQ(c.fd(), fd);
  EXPECT_EQ(b.fd(), -1);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(::fcntl(old_c_fd, F_GETFD), -1);  // the overwritten file's fd was closed
  EXPECT_EQ(c.size_blocks(), 1u);
}

TEST(PageFile, ConcurrentReadsAndWritesOnOneFile) {
  TempDir dir;
  PageFile f = PageFile::open(dir.sub("f"), 4096, true);
  constexpr int kThreads = 4;
  constexpr BlockId kBlocksPerThread = 16;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto buf = aligned_buf(4096);
      auto want = aligned_buf(4096);
      for (BlockId i = 0; i < kBlocksPerThread; ++i) {
        const BlockId b = i * kThreads + t;
        fill(buf.get(), 4096, b);
        f.write_block(b, buf.get());
      }
      for (BlockId i = 0; i < kBlocksPerThread; ++i) {
        const BlockId b = i * kThreads + t;
        f.read_block(b, buf.get());
        fill(want.get(), 4096, b);
        if (std::memcmp(buf.get(), want.get(), 4096) != 0) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(f.size_blocks(), uint64_t{kThreads} * kBlocksPerThread);
}

}  // namespace
}  // namespace calico::io
