// CorruptPageEnv: the pool of the corrupt-page tests (tests/index/corrupt_pages_test.cc, and
// the graph workload's in tests/bench/graph_test.cc). Pages with a valid checksum but bytes
// their reader cannot accept must make every operation that reads them throw
// Error(kCorruptPage) naming the page, and leave the pool sound: a bystander space reads
// back intact and the invariants hold. A page is corrupted through the pool (patch) or in
// its file with a correct checksum trailer followed by a reopen (patch_on_disk).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "calico/buffer_pool.h"
#include "io/checksum.h"
#include "support/test_util.h"

namespace calico::testing {

// A field of a page image at byte offset `off` (unaligned, native byte order).
template <class T>
T load(const std::byte* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}
template <class T>
void store(std::byte* p, size_t off, T v) {
  std::memcpy(p + off, &v, sizeof v);
}

// A pool with a bystander space whose pages must stay readable after every error.
class CorruptPageEnv {
 public:
  static constexpr uint32_t kFrames = 64;
  static constexpr uint64_t kBystanderPages = 4;
  static uint64_t bystander_stamp(uint64_t block) { return 900 + block; }

  CorruptPageEnv() {
    open_pool();
    bystander_ = pool_->create_space("bystander");
    testing::fill_space(*pool_, bystander_, kBystanderPages, bystander_stamp);
  }
  BufferPool& pool() { return *pool_; }

  // Closes the pool (flushing) and opens it again.
  void reopen() {
    pool_.reset();
    open_pool();
    bystander_ = pool_->open_space("bystander");
  }

  // Rewrites page pid through the pool.
  void patch(PageId pid, const std::function<void(std::byte*)>& fn) {
    ExclusiveGuard g = pool_->pin_exclusive(pid);
    fn(g.data());
    g.mark_dirty();
  }
  // Flushes and closes the pool, rewrites page pid in its file with a valid trailer, and
  // reopens the pool. Index objects on the pool must be gone before the call.
  void patch_on_disk(PageId pid, const std::function<void(std::byte*)>& fn) {
    const size_t ps = pool_->page_size();
    pool_.reset();
    const std::string path = dir_.sub("space_" + std::to_string(pid.space()) + ".dat");
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    std::vector<std::byte> page(ps);
    const off_t at = static_cast<off_t>(pid.block() * ps);
    ASSERT_EQ(::pread(fd, page.data(), ps, at), static_cast<ssize_t>(ps));
    fn(page.data());
    io::stamp_page(page.data(), ps, pid);
    ASSERT_EQ(::pwrite(fd, page.data(), ps, at), static_cast<ssize_t>(ps));
    ::close(fd);
    open_pool();
    bystander_ = pool_->open_space("bystander");
  }

  // op must throw Error(kCorruptPage) naming pid; then the pool must still be sound.
  template <class Fn>
  void expect_corrupt(PageId pid, Fn&& op) {
    Error e = expect_error(ErrorCode::kCorruptPage, op);
    EXPECT_EQ(e.page(), pid) << e.what();
    const std::string name = std::to_string(pid.space()) + ":" + std::to_string(pid.block());
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    expect_sound();
  }
  void expect_sound() {
    pool_->check_invariants();
    testing::expect_space(*pool_, bystander_, kBystanderPages, bystander_stamp);
  }

 private:
  void open_pool() { pool_ = BufferPool::open(testing::small_options(dir_.path(), kFrames)); }

  TempDir dir_;
  std::unique_ptr<BufferPool> pool_;
  SpaceId bystander_ = 0;
};

}  // namespace calico::testing
