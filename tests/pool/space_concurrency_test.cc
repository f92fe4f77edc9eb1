// Concurrency around a space's life: many allocators in one space under constant eviction,
// and drop_space racing threads that hold pins and keep faulting or allocating in the space.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "pool/test_points.h"
#include "support/pause_at.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_finishes;
using testing::PauseAt;
using testing::TempDir;

// Deterministic form of the race below: an allocator reads num_blocks = b, stalls; another
// claims b, writes it, and CLOCK evicts it; the first one then latches entry(b), which is
// evicted (zero) again. It used to take that latch as its claim: the CHECK on num_blocks
// aborted the process (without the CHECK, block b would have been handed out twice).
TEST(SpaceConcurrency, LateAllocatorDoesNotClaimAnEvictedBlock) {
  TempDir dir;
  PauseAt pause(pool::TestPoints::Point::kAllocateBlockRead);
  PoolOptions o = testing::small_options(dir.path(), 3);
  o.eviction_batch = 1;
  o.testing.test_points = &pause;
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("a");
  testing::fill_space(*pool, s, 2, [](uint64_t b) { return b; });
  auto late = std::async(std::launch::async, [&] {
    pause.pause_thread(std::this_thread::get_id());
    ExclusiveGuard g = pool->allocate(s);
    test::stamp_pattern(g.data(), pool->usable_page_size(), g.page_id(), 999);
    g.mark_dirty();
    return g.page_id().block();
  });
  pause.wait_paused();
  ASSERT_EQ(pause.seen().block(), 2u);
  testing::fill_space(*pool, s, 10, [](uint64_t b) { return b; });  // takes block 2, ..., 11
  const uint64_t evictions = pool->stats().evictions;
  EXPECT_GE(evictions, 8u) << "block 2 must have been evicted (3 frames)";
  pause.resume();
  expect_finishes(late, "the late allocator");
  EXPECT_EQ(late.get(), 12u);
  EXPECT_EQ(pool->space_blocks(s), 13u);
  testing::expect_space(*pool, s, 12, [](uint64_t b) { return b; });  // block 12 is the late one's
  pool->check_invariants();
}

// Deterministic form of the drop race below: a thread that holds a pin in the space and is
// about to allocate in it (a B+tree split, an IVF add) when the drop begins.
TEST(SpaceConcurrency, DropDoesNotDeadlockWithAPinHolderThatAllocates) {
  TempDir dir;
  PauseAt pause(pool::TestPoints::Point::kAllocateResolved);
  PoolOptions o = testing::small_options(dir.path(), 16);
  o.testing.test_points = &pause;
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("doomed");
  testing::fill_space(*pool, s, 4, [](uint64_t b) { return b; });
  auto holder = std::async(std::launch::async, [&] {
    pause.pause_thread(std::this_thread::get_id());
    SharedGuard keep = pool->pin_shared(PageId(s, 0));
    try {
      pool->allocate(s);  // pauses after resolving the space, before its fault latch
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInvalidArgument;  // not expected: the space was dropped
  });
  pause.wait_paused();
  auto dropper = std::async(std::launch::async, [&] { pool->drop_space(s); });
  // The drop has committed (the space is dead) and waits for `keep`: then the paused
  // allocation resumes into a dead space. (A fixed 100 ms sleep here let a slow dropper
  // still be before its step 1, and the allocation then succeeded.)
  testing::wait_until([&] { return pool->spaces().empty(); }, "the drop to mark the space dead");
  pause.resume();
  expect_finishes(holder, "the pin holder");
  expect_finishes(dropper, "drop_space");
  EXPECT_EQ(holder.get(), ErrorCode::kUnknownSpace);
  dropper.get();
  EXPECT_TRUE(pool->spaces().empty());
  pool->check_invariants();
}

// The block number used to be read before waiting on the grow mutex: a late CAS on an entry
// that another allocator had meanwhile published and CLOCK evicted succeeded, and the
// CHECK on num_blocks aborted the process (2 of 4 runs with 16 allocators and 6 frames);
// without the CHECK the block would have been handed out twice.
TEST(SpaceConcurrency, ManyAllocatorsInOneSpaceUnderEviction) {
  constexpr int kThreads = 16, kPerThread = 150, kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    TempDir dir;
    PoolOptions o = testing::small_options(dir.path(), 6);
    o.eviction_batch = 2;
    auto pool = BufferPool::open(o);
    SpaceId s = pool->create_space("a");
    std::atomic<int> pool_full{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread;) {
          try {
            ExclusiveGuard g = pool->allocate(s);
            test::stamp_pattern(g.data(), pool->usable_page_size(), g.page_id(), uint64_t(t) << 32 | i);
            g.mark_dirty();
            ++i;
          } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::kPoolFull) << e.what();  // 16 guards, 6 frames: retry
            pool_full.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(pool->space_blocks(s), uint64_t{kThreads} * kPerThread);
    pool->check_invariants();
    std::set<uint64_t> seen;
    for (uint64_t b = 0; b < pool->space_blocks(s); ++b) {
      PageId pid(s, static_cast<BlockId>(b));
      SharedGuard g = pool->pin_shared(pid);
      ASSERT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), pid)) << "block " << b;
      ASSERT_TRUE(seen.insert(test::pattern_stamp(g.data())).second) << "block " << b << " handed out twice";
    }
    EXPECT_EQ(seen.size(), size_t{kThreads} * kPerThread);
    EXPECT_GT(pool->stats().evictions, 0u);
  }
}

// drop_space used to hold the space's fault latch exclusively while waiting for pins, and a
// pin holder that faulted or allocated another page of the space waited for that latch:
// a deadlock reachable from B+tree splits and IVF adds. Now the pin holder gets kUnknownSpace.
TEST(SpaceConcurrency, DropFailsPinHoldersThatFaultOrAllocateInsteadOfDeadlocking) {
  for (bool allocate : {false, true}) {
    SCOPED_TRACE(allocate ? "allocate" : "fault");
    TempDir dir;
    auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
    SpaceId s = pool->create_space("doomed");
    SpaceId other = pool->create_space("other");
    testing::fill_space(*pool, s, 40, [](uint64_t b) { return b; });  // 40 pages, 16 frames
    testing::fill_space(*pool, other, 5, [](uint64_t b) { return 100 + b; });
    pool->flush();

    std::atomic<bool> pinned{false};
    auto holder = std::async(std::launch::async, [&] {
      SharedGuard keep = pool->pin_shared(PageId(s, 0));
      pinned = true;
      // Wait until the drop has marked the space dead (it then waits for `keep`).
      while (!pool->spaces().empty() && pool->spaces().size() == 2) std::this_thread::yield();
      int unknown = 0;
      if (allocate) {
        try {
          pool->allocate(s);
        } catch (const Error& e) {
          if (e.code() == ErrorCode::kUnknownSpace) ++unknown;
        }
      } else {
        for (BlockId b = 1; b < 40; ++b) {
          try {
            SharedGuard g = pool->pin_shared(PageId(s, b));
          } catch (const Error& e) {
            if (e.code() == ErrorCode::kUnknownSpace) ++unknown;
          }
        }
      }
      return unknown;  // `keep` is released here: the drop can finish
    });
    while (!pinned) std::this_thread::yield();
    auto dropper = std::async(std::launch::async, [&] { pool->drop_space(s); });
    expect_finishes(holder, "the pin holder");
    expect_finishes(dropper, "drop_space");
    EXPECT_GE(holder.get(), 1) << "a fault or allocation in the dropped space must fail with kUnknownSpace";
    dropper.get();
    EXPECT_EQ(pool->spaces().size(), 1u);
    testing::expect_space(*pool, other, 5, [](uint64_t b) { return 100 + b; });
    pool->check_invariants();
  }
}

}  // namespace
}  // namespace calico
