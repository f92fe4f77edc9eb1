// Prefetch reads run in per-thread async lanes (pool/async_lane.h): a page one thread
// prefetched is completed by whichever thread needs it, and a thread waiting for its own
// read never holds up another thread's prefetches.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "calico/buffer_pool.h"
#include "io/fault_injector.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::small_options;
using testing::TempDir;

auto stamp_plus(uint64_t base) {
  return [base](BlockId b) { return base + b; };
}

void fill(const TempDir& dir, BlockId pages) {
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  testing::fill_space(*pool, pool->create_space("t"), pages, stamp_plus(0));
}

// Pins each page and checks its stamp (fill's pattern).
void expect_pages_intact(BufferPool& pool, const std::vector<PageId>& pids) {
  for (PageId pid : pids) {
    SharedGuard g = pool.pin_shared(pid);
    EXPECT_TRUE(bench::check_pattern(g.data(), pool.usable_page_size(), pid)) << "block " << pid.block();
  }
}

TEST(AsyncLanes, PagesPrefetchedByOneThreadAreCompletedByAnother) {
  TempDir dir;
  fill(dir, 100);
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  const SpaceId s = pool->open_space("t");
  std::vector<PageId> group;
  for (BlockId b = 0; b < 100; b += 3) group.push_back(PageId(s, b));
  // The prefetching thread ends with its reads (most likely) still in flight in its lane.
  std::thread([&] { pool->prefetch_group(group); }).join();
  pool->check_invariants();
  EXPECT_EQ(pool->stats().prefetch_issued, group.size());
  expect_pages_intact(*pool, group);
  const PoolStats st = pool->stats();
  EXPECT_EQ(st.faults, 0u) << "this thread waited for the other lane's reads, it did not read again";
  EXPECT_GT(st.read_inflight_ns, 0u);
  pool->check_invariants();
}

// Holds the completion of one page's read (as a slow disk would) until released.
class HeldRead : public io::FaultInjector {
 public:
  explicit HeldRead(uint64_t offset) : offset_(offset) {}
  int on_complete(bool is_write, int, uint64_t offset, uint32_t, int result) override {
    if (is_write || offset != offset_) return result;
    std::unique_lock lock(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    return result;
  }
  bool wait_held(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return held_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const uint64_t offset_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool released_ = false;
};

// Regression: with one shared ring, a thread waiting for its read held the ring's mutex, so
// every other thread's prefetch and page wait queued behind that one read (the second
// search thread larger than memory added 3-10%).
TEST(AsyncLanes, AThreadWaitingForItsReadDoesNotHoldUpAnothersPrefetch) {
  TempDir dir;
  fill(dir, 100);
  PoolOptions opt = small_options(dir.path(), 64);
  const BlockId held_block = 7, other_block = 40;
  HeldRead disk(uint64_t{held_block} * opt.page_size);
  opt.fault_injector = &disk;
  auto pool = BufferPool::open(opt);
  const SpaceId s = pool->open_space("t");

  std::thread waiter([&] {
    const PageId pid(s, held_block);
    pool->prefetch_group(std::span(&pid, 1));
    SharedGuard g = pool->pin_shared(pid);  // completes its lane's read: held in on_complete
    EXPECT_TRUE(bench::check_pattern(g.data(), pool->usable_page_size(), pid));
  });
  ASSERT_TRUE(disk.wait_held(std::chrono::seconds(30))) << "the held read never completed";

  auto other = std::async(std::launch::async, [&] {
    const PageId pid(s, other_block);
    pool->prefetch_group(std::span(&pid, 1));
    SharedGuard g = pool->pin_shared(pid);
    return bench::check_pattern(g.data(), pool->usable_page_size(), pid);
  });
  const bool done = other.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  disk.release();
  waiter.join();
  EXPECT_TRUE(done) << "another thread's prefetch waited for the held read";
  EXPECT_TRUE(other.get());
  EXPECT_EQ(pool->stats().prefetch_issued, 2u);
  EXPECT_EQ(pool->stats().faults, 0u);
  pool->check_invariants();
}

// Regression: a thread that prefetched and ended left its completed reads in its lane, and
// their frames were neither free nor evictable until the pool ran out of frames (the
// larger-than-memory bench starts new search threads each run). Eviction rounds now reap
// every lane: each frame is free or holds a page.
TEST(AsyncLanes, ReadsOfAThreadThatEndedAreCompletedByEviction) {
  TempDir dir;
  fill(dir, 200);
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  const SpaceId s = pool->open_space("t");
  std::vector<PageId> group;
  for (BlockId b = 0; b < 24; ++b) group.push_back(PageId(s, b));
  std::thread([&] { EXPECT_EQ(pool->prefetch_group(group), group.size()); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the reads complete (unreaped)
  auto settled = [&] {
    const PoolStats st = pool->stats();
    return st.resident_pages + st.free_frames == st.frames;
  };
  for (int pass = 0; pass < 5 && !settled(); ++pass) {
    for (BlockId b = 100; b < 200; ++b) {
      SharedGuard g = pool->pin_shared(PageId(s, b));
      ASSERT_TRUE(bench::check_pattern(g.data(), pool->usable_page_size(), g.page_id()));
    }
  }
  EXPECT_GT(pool->stats().evictions, 0u);
  EXPECT_TRUE(settled()) << "frames of completed prefetch reads were never given back";
  pool->check_invariants();
  expect_pages_intact(*pool, group);
}

}  // namespace
}  // namespace calico
