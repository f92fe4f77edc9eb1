// Prefetch reads run in per-thread async lanes (pool/async_lane.h): a page one thread
// prefetched is completed by whichever thread needs it, and a thread waiting for its own
// read never holds up another thread's prefetches.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "calico/buffer_pool.h"
#include "io/fault_injector.h"
#include "pool/test_points.h"
#include "support/pause_at.h"
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

// Blocks 0 .. n-1 of space s.
std::vector<PageId> first_pages(SpaceId s, BlockId n) {
  std::vector<PageId> pids;
  for (BlockId b = 0; b < n; ++b) pids.push_back(PageId(s, b));
  return pids;
}

// Pins each page and checks its stamp (fill's pattern).
void expect_pages_intact(BufferPool& pool, const std::vector<PageId>& pids) {
  for (PageId pid : pids) {
    SharedGuard g = pool.pin_shared(pid);
    EXPECT_TRUE(test::check_pattern(g.data(), pool.usable_page_size(), pid)) << "block " << pid.block();
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
  opt.testing.fault_injector = &disk;
  auto pool = BufferPool::open(opt);
  const SpaceId s = pool->open_space("t");

  std::thread waiter([&] {
    const PageId pid(s, held_block);
    pool->prefetch_group(std::span(&pid, 1));
    SharedGuard g = pool->pin_shared(pid);  // completes its lane's read: held in on_complete
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), pid));
  });
  ASSERT_TRUE(disk.wait_held(std::chrono::seconds(30))) << "the held read never completed";

  auto other = std::async(std::launch::async, [&] {
    const PageId pid(s, other_block);
    pool->prefetch_group(std::span(&pid, 1));
    SharedGuard g = pool->pin_shared(pid);
    return test::check_pattern(g.data(), pool->usable_page_size(), pid);
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
  auto settled = [&] {
    const PoolStats st = pool->stats();
    return st.resident_pages + st.free_frames == st.frames;
  };
  // Eviction passes until the reads, once the kernel completes them (unreaped: their thread
  // ended), have been given back by eviction rounds; a watchdog bounds the wait.
  testing::wait_until([&] {
    for (BlockId b = 100; b < 200; ++b) {
      SharedGuard g = pool->pin_shared(PageId(s, b));
      EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), g.page_id()));
    }
    return settled();
  }, "eviction rounds to give back the frames of completed prefetch reads");
  EXPECT_GT(pool->stats().evictions, 0u);
  pool->check_invariants();
  expect_pages_intact(*pool, group);
}

// Anything taking a frame for a prefetch can throw, not only calico::Error (a write-back
// failure, which prefetch ignores): std::bad_alloc from an eviction round's buffers, say.
// The claimed entry must not stay pending with no read behind it (a later access of the page
// aborted in help_async, and drop_space never finished), and the reads already pushed in the
// batch must reach the kernel.
struct ThrowWhenPrefetchTakesAFrame : pool::TestPoints {
  std::atomic<int> countdown{0};
  void at(Point point, PageId) override {
    if (point == Point::kPrefetchClaimed && countdown.fetch_sub(1) == 1) throw std::bad_alloc();
  }
};

TEST(AsyncLanes, AnythingThrownWhileTakingAPrefetchFrameLeavesNoPendingEntry) {
  TempDir dir;
  fill(dir, 100);
  ThrowWhenPrefetchTakesAFrame points;
  PoolOptions o = small_options(dir.path(), 64);
  o.testing.test_points = &points;
  auto pool = BufferPool::open(o);
  const SpaceId s = pool->open_space("t");
  const std::vector<PageId> group = first_pages(s, 10);
  points.countdown = 3;  // blocks 0 and 1 are pushed, block 2's frame throws
  EXPECT_THROW(pool->prefetch_group(group), std::bad_alloc);
  pool->check_invariants();
  expect_pages_intact(*pool, group);
  const PoolStats st = pool->stats();
  EXPECT_EQ(st.prefetch_issued, 2u) << "the reads pushed before the throw were submitted";
  EXPECT_EQ(st.faults, group.size() - 2) << "blocks 2.. were read by their pins";
  pool->check_invariants();
  auto dropped = std::async(std::launch::async, [&] { pool->drop_space(s); });
  testing::expect_finishes(dropped, "drop_space after a prefetch that threw");
  dropped.get();
  pool->check_invariants();
}

// A device that stops answering: waits time out and polls find nothing; a ring gives up
// after `polls` polls (1 ms apart) instead of ~10 s.
class StalledDevice : public io::FaultInjector {
 public:
  std::atomic<bool> stall{false};
  int on_complete(bool, int, uint64_t, uint32_t, int result) override { return result; }
  bool stalled() override { return stall.load(); }
  unsigned wait_polls(unsigned) override { return 50; }
};

// Closing a pool whose prefetch ring gave up: the destructor must not throw (it ended the
// process through std::terminate); the failure is reported on stderr.
TEST(AsyncLanes, ClosingAPoolWhosePrefetchRingGaveUpDoesNotEndTheProcess) {
  TempDir dir;
  fill(dir, 100);
  StalledDevice device;
  PoolOptions o = small_options(dir.path(), 64);
  o.testing.fault_injector = &device;
  auto pool = BufferPool::open(o);
  const SpaceId s = pool->open_space("t");
  const std::vector<PageId> group = first_pages(s, 8);
  device.stall = true;
  ASSERT_EQ(pool->prefetch_group(group), group.size());
  ::testing::internal::CaptureStderr();
  pool.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("did not complete"), std::string::npos) << err;
}

// Dropping a space whose reads a failed ring still holds: the drop is committed before it
// waits for reads, so it must finish (it threw kIoError after marking the space dead). The
// abandoned reads' frames come back to the pool if the kernel completes them after all.
TEST(AsyncLanes, ADropFinishesWhenAPrefetchRingGaveUpAndItsFramesComeBack) {
  TempDir dir;
  fill(dir, 100);
  StalledDevice device;
  PoolOptions o = small_options(dir.path(), 64);
  o.testing.fault_injector = &device;
  auto pool = BufferPool::open(o);
  const SpaceId s = pool->open_space("t");
  const SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, other, 200, stamp_plus(0));
  pool->flush();  // nothing dirty: no write-back needs the stalled device
  const std::vector<PageId> group = first_pages(s, 8);
  device.stall = true;
  ASSERT_EQ(pool->prefetch_group(group), group.size());
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(pool->drop_space(s));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(pool->spaces().size(), 1u);
  testing::expect_error(ErrorCode::kUnknownSpace, [&] { pool->pin_shared(PageId(s, 0)); });
  pool->check_invariants();
  device.stall = false;  // the device answers again: the abandoned reads complete
  EXPECT_EQ(pool->prefetch_group(std::vector<PageId>{PageId(other, 0)}), 0u)
      << "a ring that gave up takes no new reads (it collects its late completions)";
  std::vector<PageId> others;
  for (BlockId b = 0; b < 200; ++b) others.push_back(PageId(other, b));
  auto settled = [&] {
    const PoolStats st = pool->stats();
    return st.resident_pages + st.free_frames == st.frames;
  };
  for (int pass = 0; pass < 5 && !settled(); ++pass) expect_pages_intact(*pool, others);
  EXPECT_TRUE(settled()) << "the frames of the abandoned reads never came back";
  pool->check_invariants();
  ::testing::internal::CaptureStderr();
  pool.reset();
  ::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace calico
