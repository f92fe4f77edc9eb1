// Tests for pool/free_list.h: initial order, push/pop, snapshot and concurrent use.
#include "pool/free_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace calico::pool {
namespace {

constexpr uint64_t kSeed = 0xF4EE;  // fixed so a failure replays

std::vector<FrameId> iota_frames(FrameId n) {
  std::vector<FrameId> v;
  for (FrameId f = 1; f <= n; ++f) v.push_back(f);
  return v;
}

std::vector<FrameId> sorted(std::vector<FrameId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(FreeList, PopsOneToNAscendingThenEmpty) {
  constexpr FrameId kN = 100;
  FreeList fl(kN);
  EXPECT_EQ(fl.size(), kN);
  for (FrameId f = 1; f <= kN; ++f) {
    ASSERT_EQ(fl.pop(), f);
    EXPECT_EQ(fl.size(), kN - f);
  }
  EXPECT_EQ(fl.pop(), kInvalidFrame);
  EXPECT_EQ(fl.pop(), kInvalidFrame);
  EXPECT_EQ(fl.size(), 0u);
}

// take(f): preferred frames (direct and predictive translations).
TEST(FreeList, TakeRemovesAGivenFrameAndPopSkipsIt) {
  FreeList fl(5);
  EXPECT_TRUE(fl.take(3));
  EXPECT_FALSE(fl.take(3)) << "taken twice";
  EXPECT_FALSE(fl.take(6)) << "out of range";
  EXPECT_FALSE(fl.take(kInvalidFrame));
  EXPECT_EQ(fl.size(), 4u);
  EXPECT_EQ(sorted(fl.snapshot()), (std::vector<FrameId>{1, 2, 4, 5}));
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_EQ(fl.pop(), 2u);
  EXPECT_EQ(fl.pop(), 4u) << "the taken frame is skipped";
  fl.push(3);  // freed again: listed once, although a stale copy remains in the stack
  EXPECT_EQ(fl.size(), 2u);
  EXPECT_EQ(fl.pop(), 3u);
  EXPECT_EQ(fl.pop(), 5u);
  EXPECT_EQ(fl.pop(), kInvalidFrame) << "the stale copy of 3 is not handed out";
  // Many take/push cycles keep the stack bounded (compaction) and the count exact.
  for (int i = 0; i < 1000; ++i) {
    fl.push(2);
    ASSERT_TRUE(fl.take(2));
  }
  EXPECT_EQ(fl.size(), 0u);
  fl.push(4);
  EXPECT_EQ(fl.pop(), 4u);
  EXPECT_EQ(fl.pop(), kInvalidFrame);
}

TEST(FreeList, EmptyListPopsInvalid) {
  FreeList fl(0);
  EXPECT_EQ(fl.size(), 0u);
  EXPECT_EQ(fl.pop(), kInvalidFrame);
  EXPECT_TRUE(fl.snapshot().empty());
}

TEST(FreeList, SingleFrame) {
  FreeList fl(1);
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_EQ(fl.pop(), kInvalidFrame);
  fl.push(1);
  EXPECT_EQ(fl.size(), 1u);
  EXPECT_EQ(fl.pop(), 1u);
}

TEST(FreeList, PushThenPopIsLastInFirstOut) {
  FreeList fl(4);
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_EQ(fl.pop(), 2u);
  fl.push(2);
  fl.push(1);
  EXPECT_EQ(fl.size(), 4u);
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_EQ(fl.pop(), 2u);
  EXPECT_EQ(fl.pop(), 3u);
  EXPECT_EQ(fl.pop(), 4u);
  EXPECT_EQ(fl.pop(), kInvalidFrame);
  // An emptied list works again after a push.
  fl.push(3);
  EXPECT_EQ(fl.size(), 1u);
  EXPECT_EQ(fl.pop(), 3u);
}

TEST(FreeList, SnapshotListsTheFreeFrames) {
  FreeList fl(10);
  EXPECT_EQ(sorted(fl.snapshot()), iota_frames(10));
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_EQ(fl.pop(), 2u);
  EXPECT_EQ(fl.pop(), 3u);
  EXPECT_EQ(sorted(fl.snapshot()), (std::vector<FrameId>{4, 5, 6, 7, 8, 9, 10}));
  fl.push(2);
  EXPECT_EQ(sorted(fl.snapshot()), (std::vector<FrameId>{2, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(fl.snapshot().size(), fl.size());
  // A snapshot is a copy: changing the list later does not change it.
  std::vector<FrameId> snap = fl.snapshot();
  EXPECT_EQ(fl.pop(), 2u);
  EXPECT_EQ(snap.size(), 8u);
}

TEST(FreeList, FreeingAFreeFrameIsAnInvariantViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FreeList fl(2);
  EXPECT_EQ(fl.pop(), 1u);
  EXPECT_DEATH(fl.push(2), "invariant violated");
}

#if CALICO_CHECKS_LEVEL >= 2
TEST(FreeList, PushingTheInvalidFrameIsAnInvariantViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FreeList fl(2);
  EXPECT_DEATH(fl.push(kInvalidFrame), "invariant violated");
}
#endif

// Four threads take and give back frames at random. Ownership is tracked per frame: a frame
// handed out twice at once, or lost, or duplicated, is caught.
TEST(FreeList, ConcurrentPushPopPreservesTheFrames) {
  constexpr FrameId kN = 64;
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 200000;
  FreeList fl(kN);
  auto owner = std::make_unique<std::atomic<int>[]>(kN + 1);
  for (FrameId f = 0; f <= kN; ++f) owner[f].store(0);
  std::atomic<int> violations{0};
  std::atomic<int> empties{0};
  std::latch ready(kThreads);  // all threads start together

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.arrive_and_wait();
      std::mt19937_64 rng(kSeed + t);
      std::vector<FrameId> mine;
      for (int op = 0; op < kOpsPerThread; ++op) {
        bool take = mine.empty() || (mine.size() < 24 && (rng() & 1));
        if (take) {
          FrameId f = fl.pop();
          if (f == kInvalidFrame) {
            empties.fetch_add(1);
            continue;
          }
          if (f > kN || owner[f].exchange(t + 1) != 0) violations.fetch_add(1);
          mine.push_back(f);
        } else {
          size_t i = rng() % mine.size();
          FrameId f = mine[i];
          mine[i] = mine.back();
          mine.pop_back();
          if (owner[f].exchange(0) != t + 1) violations.fetch_add(1);
          fl.push(f);
        }
      }
      for (FrameId f : mine) {
        if (owner[f].exchange(0) != t + 1) violations.fetch_add(1);
        fl.push(f);
      }
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(fl.size(), kN);
  EXPECT_EQ(sorted(fl.snapshot()), iota_frames(kN));
}

}  // namespace
}  // namespace calico::pool
