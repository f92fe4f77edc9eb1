// Corrupt pages, short files and failing I/O: typed errors naming the page, other pages
// still readable, nothing lost.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "io/fault_injector.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::TempDir;

constexpr uint64_t kPages = 20;
auto stamp_of = [](uint64_t b) { return 40 + b; };

std::string space_file(const TempDir& dir, SpaceId s) { return dir.sub("space_" + std::to_string(s) + ".dat"); }

SpaceId make_space(const TempDir& dir) {
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, kPages, stamp_of);
  return s;  // closing flushes
}

void patch_file(const std::string& path, off_t offset, const void* bytes, size_t n) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, n, offset), static_cast<ssize_t>(n));
  ::close(fd);
}

void flip_byte(const std::string& path, off_t offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char c;
  ASSERT_EQ(::pread(fd, &c, 1, offset), 1);
  c ^= 0x20;
  ASSERT_EQ(::pwrite(fd, &c, 1, offset), 1);
  ::close(fd);
}

TEST(Corruption, FlippedByteIsAChecksumErrorNamingThePage) {
  TempDir dir;
  SpaceId s = make_space(dir);
  for (off_t in_page : {off_t{0}, off_t{100}, off_t{4095 - 20}, off_t{4095}}) {
    SCOPED_TRACE(in_page);
    flip_byte(space_file(dir, s), 7 * 4096 + in_page);
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    PageId bad(s, 7);
    Error e = expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_shared(bad); });
    EXPECT_EQ(e.page(), bad);
    EXPECT_NE(std::string(e.what()).find(std::to_string(s) + ":7"), std::string::npos) << e.what();
    // Every way in reports it, every time; the other pages are fine.
    expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_exclusive(bad); });
    expect_error(ErrorCode::kChecksumMismatch, [&] { pool->optimistic_read(bad, [](const std::byte*) { return 0; }); });
    for (BlockId b = 0; b < kPages; ++b) {
      if (b == 7) continue;
      SharedGuard g = pool->pin_shared(PageId(s, b));
      EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(b));
    }
    pool->check_invariants();
    flip_byte(space_file(dir, s), 7 * 4096 + in_page);  // undo for the next round
  }
}

TEST(Corruption, MisdirectedPageIsDetected) {
  TempDir dir;
  SpaceId s = make_space(dir);
  // Block 4 gets a perfectly valid image of block 3: only the page id in the trailer differs.
  std::vector<char> page(4096);
  int fd = ::open(space_file(dir, s).c_str(), O_RDONLY);
  ASSERT_EQ(::pread(fd, page.data(), 4096, 3 * 4096), 4096);
  ::close(fd);
  patch_file(space_file(dir, s), 4 * 4096, page.data(), 4096);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_shared(PageId(s, 4)); });
  SharedGuard g = pool->pin_shared(PageId(s, 3));
  EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(3));
}

TEST(Corruption, TruncatedFileIsAShortRead) {
  TempDir dir;
  SpaceId s = make_space(dir);
  ASSERT_EQ(::truncate(space_file(dir, s).c_str(), 10 * 4096 + 1000), 0);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  EXPECT_EQ(pool->space_blocks(s), kPages) << "the catalog still says 20 blocks";
  Error e = expect_error(ErrorCode::kShortRead, [&] { pool->pin_shared(PageId(s, 10)); });
  EXPECT_EQ(e.page(), PageId(s, 10));
  expect_error(ErrorCode::kShortRead, [&] { pool->pin_shared(PageId(s, 15)); });
  SharedGuard g = pool->pin_shared(PageId(s, 9));
  EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(9));
}

// Fails reads or writes of chosen blocks while armed.
class FailingDisk : public io::FaultInjector {
 public:
  std::atomic<int64_t> fail_read_block{-1};
  std::atomic<bool> fail_writes{false};
  std::atomic<int> short_read_block{-1};
  std::atomic<int> failed{0};
  int on_complete(bool is_write, int, uint64_t offset, uint32_t, int result) override {
    int64_t block = static_cast<int64_t>(offset / 4096);
    if (!is_write && block == fail_read_block.load()) return ++failed, -EIO;
    if (!is_write && block == short_read_block.load()) return ++failed, 512;
    if (is_write && fail_writes.load()) return ++failed, -EIO;
    return result;
  }
};

TEST(Corruption, ReadErrorsAreTypedAndTransient) {
  TempDir dir;
  SpaceId s = make_space(dir);
  FailingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 64);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  disk.fail_read_block = 5;
  disk.short_read_block = 6;
  Error eio = expect_error(ErrorCode::kIoError, [&] { pool->pin_shared(PageId(s, 5)); });
  EXPECT_EQ(eio.page(), PageId(s, 5));
  expect_error(ErrorCode::kShortRead, [&] { pool->pin_shared(PageId(s, 6)); });
  // A failed prefetch leaves the page evicted and counts the failure.
  std::vector<PageId> group{PageId(s, 5), PageId(s, 8)};
  pool->prefetch_group(group);
  SharedGuard g8 = pool->pin_shared(PageId(s, 8));
  expect_error(ErrorCode::kIoError, [&] { pool->pin_shared(PageId(s, 5)); });
  EXPECT_EQ(pool->stats().prefetch_failed, 1u);
  g8.release();
  pool->check_invariants();
  disk.fail_read_block = -1;
  disk.short_read_block = -1;
  for (BlockId b : {5u, 6u}) {
    SharedGuard g = pool->pin_shared(PageId(s, b));
    EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(b));
  }
}

TEST(Corruption, FailedWriteBackLosesNothing) {
  TempDir dir;
  FailingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 4);
  o.testing.fault_injector = &disk;
  o.eviction_batch = 1;  // low watermark 0: nothing is evicted before the pool is full
  SpaceId s;
  {
    auto pool = BufferPool::open(o);
    s = pool->create_space("data");
    testing::fill_space(*pool, s, 4, stamp_of);  // fills the pool with dirty pages
    disk.fail_writes = true;
    // Making room needs a write-back, which fails: the caller sees kIoError.
    expect_error(ErrorCode::kIoError, [&] { pool->allocate(s); });
    expect_error(ErrorCode::kIoError, [&] { pool->flush(); });
    EXPECT_GT(disk.failed.load(), 0);
    disk.fail_writes = false;
    testing::expect_space(*pool, s, 4, stamp_of);  // still in memory, still dirty
    pool->flush();
    pool->check_invariants();
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 4));
  testing::expect_space(*pool, s, 4, stamp_of);
}

}  // namespace
}  // namespace calico
