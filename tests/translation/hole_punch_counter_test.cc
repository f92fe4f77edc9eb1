// Tests for translation/array/hole_punch_counter.h: reference counting, the punch lock and invariant I1.
#include "translation/array/hole_punch_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace calico::translation {
namespace {

constexpr uint64_t kSeed = 0x5EED1234;  // fixed so a failure replays

TEST(HolePunchCounter, AcquireAndReleaseCount) {
  PunchCounter c{0};
  int punches = 0;
  auto punch = [&] { ++punches; };
  acquire_punch_ref(c);
  EXPECT_EQ(c.load(), 1u);
  acquire_punch_ref(c);
  acquire_punch_ref(c);
  EXPECT_EQ(c.load(), 3u);
  EXPECT_FALSE(release_punch_ref(c, punch));
  EXPECT_EQ(c.load(), 2u);
  EXPECT_FALSE(release_punch_ref(c, punch));
  EXPECT_EQ(c.load(), 1u);
  EXPECT_EQ(punches, 0) << "a release that is not the last must not punch";
  EXPECT_TRUE(release_punch_ref(c, punch));
  EXPECT_EQ(c.load(), 0u);
  EXPECT_EQ(punches, 1);
}

TEST(HolePunchCounter, LastReleasePunchesOnceUnderTheLock) {
  PunchCounter c{0};
  acquire_punch_ref(c);
  int calls = 0;
  uint32_t seen_inside = 0;
  bool punched = release_punch_ref(c, [&] {
    ++calls;
    seen_inside = c.load();
  });
  EXPECT_TRUE(punched);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen_inside, kPunchLock) << "the punch must run with the lock bit set and count 0";
  EXPECT_EQ(c.load(), 0u);

  // The counter is usable again after a punch.
  acquire_punch_ref(c);
  EXPECT_EQ(c.load(), 1u);
  EXPECT_TRUE(release_punch_ref(c, [&] { ++calls; }));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(c.load(), 0u);
}

TEST(HolePunchCounter, ManyReferencesOnlyLastPunches) {
  PunchCounter c{0};
  constexpr int kRefs = 1000;
  for (int i = 0; i < kRefs; ++i) acquire_punch_ref(c);
  EXPECT_EQ(c.load(), uint32_t{kRefs});
  int punches = 0;
  for (int i = 0; i < kRefs - 1; ++i) {
    EXPECT_FALSE(release_punch_ref(c, [&] { ++punches; }));
    EXPECT_EQ(c.load(), uint32_t(kRefs - 1 - i));
  }
  EXPECT_EQ(punches, 0);
  EXPECT_TRUE(release_punch_ref(c, [&] { ++punches; }));
  EXPECT_EQ(punches, 1);
  EXPECT_EQ(c.load(), 0u);
}

TEST(HolePunchCounter, ReleaseWithoutReferenceIsAnInvariantViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  PunchCounter zero{0};
  EXPECT_DEATH(release_punch_ref(zero, [] {}), "invariant violated");
  PunchCounter locked{kPunchLock};
  EXPECT_DEATH(release_punch_ref(locked, [] {}), "invariant violated");
}

TEST(HolePunchCounter, AcquireWaitsWhileThePunchLockIsHeld) {
  PunchCounter c{kPunchLock};  // as if another thread were punching right now
  std::atomic<bool> attempted{false};
  std::atomic<bool> returned{false};
  std::thread t([&] {
    attempted.store(true);
    acquire_punch_ref(c);
    returned.store(true);
  });
  while (!attempted.load()) std::this_thread::yield();
  // Give the acquirer many chances to (wrongly) get through; it must still be waiting.
  bool got_through = false;
  for (int i = 0; i < 1000 && !got_through; ++i) {
    std::this_thread::yield();
    got_through = returned.load();
  }
  EXPECT_FALSE(got_through) << "acquire returned while the punch lock was held";
  EXPECT_EQ(c.load(), kPunchLock) << "a waiting acquirer must not touch a locked counter";
  c.store(0, std::memory_order_release);  // the punch ends
  t.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(c.load(), 1u);
}

// Four threads acquire and release at random. A shared `held` count (raised after acquire
// returns, lowered before release is called) is never above the true count, so whenever a
// punch runs (true count 0) it must read 0, and no acquirer may come out of acquire while a
// punch is running.
TEST(HolePunchCounter, ConcurrentAcquireReleaseNeverPunchesUnderAReference) {
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 300000;
  constexpr int kMaxHeldPerThread = 2;

  PunchCounter c{0};
  std::atomic<int> held{0};
  std::atomic<bool> in_punch{false};
  std::atomic<int> violations{0};
  std::atomic<int> punches{0};
  std::atomic<int> releases_that_punched{0};
  std::latch ready(kThreads);  // all threads start together

  auto punch = [&] {
    if (in_punch.exchange(true)) violations.fetch_add(1);  // two punches at once
    if (c.load() != kPunchLock) violations.fetch_add(1);
    if (held.load() != 0) violations.fetch_add(1);
    for (int i = 0; i < 50; ++i) cpu_relax();  // widen the window for acquirers
    if (held.load() != 0) violations.fetch_add(1);
    punches.fetch_add(1);
    in_punch.store(false);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.arrive_and_wait();
      std::mt19937_64 rng(kSeed + t);
      int mine = 0;
      auto release_one = [&] {
        held.fetch_sub(1);
        if (release_punch_ref(c, punch)) releases_that_punched.fetch_add(1);
        --mine;
      };
      for (int op = 0; op < kOpsPerThread; ++op) {
        bool acquire = mine == 0 || (mine < kMaxHeldPerThread && (rng() & 1));
        if (acquire) {
          acquire_punch_ref(c);
          if (in_punch.load()) violations.fetch_add(1);
          if ((c.load() & kPunchLock) != 0) violations.fetch_add(1);
          held.fetch_add(1);
          ++mine;
        } else {
          release_one();
        }
      }
      while (mine > 0) release_one();
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(c.load(), 0u);
  EXPECT_EQ(held.load(), 0);
  EXPECT_GE(punches.load(), 1) << "the very last release always punches";
  EXPECT_EQ(punches.load(), releases_that_punched.load());
}

}  // namespace
}  // namespace calico::translation
