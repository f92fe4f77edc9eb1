// Tests for translation/entry.h: the 64-bit entry word's encoding and its latch transitions.
#include "translation/entry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <cstdint>
#include <thread>
#include <vector>

namespace calico::translation {
namespace {

constexpr FrameId kFrames[] = {1, 2, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
constexpr uint32_t kVersions[] = {0, 1, 0x800000u, kVersionMask - 1, kVersionMask};
constexpr uint8_t kStates[] = {kUnlocked, 1, 2, kMaxShared - 1, kMaxShared,
                               kExclusive, kIoPending, kMarked, 255};

TEST(EntryWord, RoundTripsEveryField) {
  for (FrameId f : kFrames) {
    for (uint32_t v : kVersions) {
      for (uint8_t s : kStates) {
        EntryWord w = EntryWord::make(f, v, s);
        EXPECT_EQ(w.frame(), f);
        EXPECT_EQ(w.version(), v);
        EXPECT_EQ(w.state(), s);
        EXPECT_EQ(w.raw, (uint64_t{f} << 32) | (uint64_t{v} << 8) | s);
        EXPECT_TRUE(w.resident());
        EXPECT_FALSE(w.evicted());
      }
    }
  }
}

TEST(EntryWord, ExtremesDoNotBleedIntoNeighbours) {
  EntryWord all = EntryWord::make(0xFFFFFFFFu, kVersionMask, 0xFF);
  EXPECT_EQ(all.raw, ~uint64_t{0});
  EXPECT_EQ(all.frame(), 0xFFFFFFFFu);
  EXPECT_EQ(all.version(), kVersionMask);
  EXPECT_EQ(all.state(), 0xFF);

  // Only the frame set: version and state read zero.
  EntryWord frame_only = EntryWord::make(0xFFFFFFFFu, 0, 0);
  EXPECT_EQ(frame_only.raw, uint64_t{0xFFFFFFFF} << 32);
  EXPECT_EQ(frame_only.version(), 0u);
  EXPECT_EQ(frame_only.state(), 0);

  // Only the version set.
  EntryWord version_only = EntryWord::make(0, kVersionMask, 0);
  EXPECT_EQ(version_only.frame(), 0u);
  EXPECT_EQ(version_only.version(), kVersionMask);
  EXPECT_EQ(version_only.state(), 0);
}

TEST(EntryWord, VersionWrapsAt2To24) {
  // Bits of the version above 24 are dropped; they must not spill into the frame.
  EXPECT_EQ(EntryWord::make(9, kVersionMask + 1, kMarked).version(), 0u);
  EXPECT_EQ(EntryWord::make(9, kVersionMask + 1, kMarked).frame(), 9u);
  EXPECT_EQ(EntryWord::make(9, kVersionMask + 1, kMarked).state(), kMarked);
  EXPECT_EQ(EntryWord::make(9, (1u << 24) | 5, 0).version(), 5u);
  EXPECT_EQ(EntryWord::make(9, 0xFFFFFFFFu, 0).version(), kVersionMask);
  EXPECT_EQ(EntryWord::make(9, 0xFFFFFFFFu, 0).frame(), 9u);

  EntryWord top = EntryWord::make(0xFFFFFFFFu, kVersionMask, kExclusive);
  EntryWord next = top.next_version_unlocked();
  EXPECT_EQ(next.frame(), 0xFFFFFFFFu);
  EXPECT_EQ(next.version(), 0u);
  EXPECT_EQ(next.state(), kUnlocked);

  EntryWord w = EntryWord::make(3, kVersionMask - 2, kExclusive);
  for (int i = 0; i < 5; ++i) w = w.next_version_unlocked().with_state(kExclusive);
  EXPECT_EQ(w.version(), 2u);
  EXPECT_EQ(w.frame(), 3u);
}

TEST(EntryWord, AllZeroMeansEvicted) {
  EXPECT_EQ(EntryWord{}.raw, 0u);
  EXPECT_TRUE(EntryWord{}.evicted());
  EXPECT_FALSE(EntryWord{}.resident());
  EXPECT_EQ(EntryWord::make(kInvalidFrame, 0, kUnlocked).raw, 0u);

  Entry e{0};
  EXPECT_TRUE(load(e).evicted());

  // Not evicted, yet not resident: a loading or an I/O-pending entry.
  EXPECT_FALSE(kLoadingWord.evicted());
  EXPECT_FALSE(kLoadingWord.resident());
  EXPECT_EQ(kLoadingWord.state(), kExclusive);
  EXPECT_FALSE(kIoPendingWord.evicted());
  EXPECT_FALSE(kIoPendingWord.resident());
  EXPECT_EQ(kIoPendingWord.state(), kIoPending);
  EXPECT_NE(kLoadingWord.raw, kIoPendingWord.raw);

  // Any non-zero field means not evicted.
  EXPECT_FALSE(EntryWord::make(1, 0, 0).evicted());
  EXPECT_FALSE(EntryWord::make(0, 1, 0).evicted());
  EXPECT_FALSE(EntryWord::make(0, 0, 1).evicted());
}

TEST(EntryWord, StatePredicates) {
  for (int s = 0; s <= 255; ++s) {
    EntryWord w = EntryWord::make(4, 4, static_cast<uint8_t>(s));
    EXPECT_EQ(w.shared(), s >= 1 && s <= kMaxShared) << s;
    EXPECT_EQ(w.unlatched(), s == kUnlocked || s == kMarked) << s;
  }
}

TEST(EntryWord, FrameAndVersionIgnoresState) {
  for (FrameId f : kFrames) {
    for (uint32_t v : kVersions) {
      uint64_t base = EntryWord::make(f, v, 0).frame_and_version();
      for (int s = 0; s <= 255; ++s) {
        EXPECT_EQ(EntryWord::make(f, v, static_cast<uint8_t>(s)).frame_and_version(), base);
      }
      EXPECT_NE(EntryWord::make(f, v + 1, 0).frame_and_version(), base);
      EXPECT_NE(EntryWord::make(f ^ 1, v, 0).frame_and_version(), base);
    }
  }
}

TEST(EntryWord, WithStateKeepsFrameAndVersion) {
  EntryWord w = EntryWord::make(0xFFFFFFFFu, kVersionMask, 17);
  for (uint8_t s : kStates) {
    EntryWord x = w.with_state(s);
    EXPECT_EQ(x.frame(), 0xFFFFFFFFu);
    EXPECT_EQ(x.version(), kVersionMask);
    EXPECT_EQ(x.state(), s);
  }
}

// ---- shared latch ----

TEST(EntryLatch, SharedFromUnlockedMarkedAndShared) {
  const EntryWord unlocked = EntryWord::make(77, 123, kUnlocked);
  Entry e{unlocked.raw};
  ASSERT_TRUE(try_lock_shared(e, load(e)));
  EXPECT_EQ(load(e).raw, unlocked.with_state(1).raw);
  ASSERT_TRUE(try_lock_shared(e, load(e)));
  EXPECT_EQ(load(e).raw, unlocked.with_state(2).raw);

  // A marked page gets its second chance: the pin clears the mark.
  Entry m{unlocked.with_state(kMarked).raw};
  ASSERT_TRUE(try_lock_shared(m, load(m)));
  EXPECT_EQ(load(m).raw, unlocked.with_state(1).raw);

  // kMaxShared - 1 -> kMaxShared still works.
  Entry almost{unlocked.with_state(kMaxShared - 1).raw};
  ASSERT_TRUE(try_lock_shared(almost, load(almost)));
  EXPECT_EQ(load(almost).state(), kMaxShared);
}

TEST(EntryLatch, SharedRefusedAtMaxExclusiveAndIoPending) {
  for (uint8_t s : {kMaxShared, kExclusive, kIoPending, uint8_t{255}}) {
    EntryWord w = EntryWord::make(5, 6, s);
    Entry e{w.raw};
    EXPECT_FALSE(try_lock_shared(e, w)) << int{s};
    EXPECT_EQ(load(e).raw, w.raw) << "a refused pin must not write, state " << int{s};
  }
}

TEST(EntryLatch, SharedRefusedOnNonResidentWords) {
  for (EntryWord w : {EntryWord{}, kLoadingWord, kIoPendingWord, EntryWord::make(0, 9, 0),
                      EntryWord::make(0, 9, kMarked), EntryWord::make(0, 0, 3)}) {
    Entry e{w.raw};
    EXPECT_FALSE(try_lock_shared(e, w)) << std::hex << w.raw;
    EXPECT_EQ(load(e).raw, w.raw);
  }
}

TEST(EntryLatch, SharedFailsOnStaleObservation) {
  EntryWord seen = EntryWord::make(5, 6, kUnlocked);
  Entry e{EntryWord::make(5, 7, kUnlocked).raw};  // someone bumped the version meanwhile
  EXPECT_FALSE(try_lock_shared(e, seen));
  EXPECT_EQ(load(e).raw, EntryWord::make(5, 7, kUnlocked).raw);
}

TEST(EntryLatch, UnlockSharedKeepsFrameAndVersion) {
  const EntryWord w = EntryWord::make(0xFFFFFFFFu, kVersionMask, kUnlocked);
  Entry e{w.raw};
  for (int i = 0; i < kMaxShared; ++i) ASSERT_TRUE(try_lock_shared(e, load(e))) << i;
  EXPECT_EQ(load(e).state(), kMaxShared);
  EXPECT_FALSE(try_lock_shared(e, load(e)));
  for (int i = kMaxShared; i >= 1; --i) {
    EXPECT_EQ(load(e).state(), i);
    unlock_shared(e);
    EXPECT_EQ(load(e).frame(), 0xFFFFFFFFu);
    EXPECT_EQ(load(e).version(), kVersionMask);
  }
  EXPECT_EQ(load(e).raw, w.raw);

  // Version 0 frame 1: the lowest word that still has a pin; no borrow into the version.
  Entry low{EntryWord::make(1, 0, kUnlocked).raw};
  ASSERT_TRUE(try_lock_shared(low, load(low)));
  unlock_shared(low);
  EXPECT_EQ(load(low).raw, EntryWord::make(1, 0, kUnlocked).raw);
}

// ---- exclusive latch ----

TEST(EntryLatch, ExclusiveOnlyFromUnlockedOrMarked) {
  for (uint8_t s : {kUnlocked, kMarked}) {
    EntryWord w = EntryWord::make(8, 100, s);
    Entry e{w.raw};
    ASSERT_TRUE(try_lock_exclusive(e, w)) << int{s};
    EXPECT_EQ(load(e).raw, w.with_state(kExclusive).raw);
    // Neither a second exclusive latch nor a shared pin while it is held.
    EXPECT_FALSE(try_lock_exclusive(e, load(e)));
    EXPECT_FALSE(try_lock_shared(e, load(e)));
  }
  for (uint8_t s : {uint8_t{1}, uint8_t{2}, kMaxShared, kExclusive, kIoPending, uint8_t{255}}) {
    EntryWord w = EntryWord::make(8, 100, s);
    Entry e{w.raw};
    EXPECT_FALSE(try_lock_exclusive(e, w)) << int{s};
    EXPECT_EQ(load(e).raw, w.raw);
  }
  for (EntryWord w : {EntryWord{}, kLoadingWord, kIoPendingWord, EntryWord::make(0, 4, kMarked)}) {
    Entry e{w.raw};
    EXPECT_FALSE(try_lock_exclusive(e, w)) << std::hex << w.raw;
    EXPECT_EQ(load(e).raw, w.raw);
  }
  // Stale observation: the CAS fails and nothing is written.
  Entry e{EntryWord::make(8, 101, kUnlocked).raw};
  EXPECT_FALSE(try_lock_exclusive(e, EntryWord::make(8, 100, kUnlocked)));
  EXPECT_EQ(load(e).raw, EntryWord::make(8, 101, kUnlocked).raw);
}

TEST(EntryLatch, UnlockExclusiveWithAndWithoutBump) {
  EntryWord w = EntryWord::make(12, 40, kMarked);
  Entry e{w.raw};
  ASSERT_TRUE(try_lock_exclusive(e, w));
  EntryWord held = load(e);
  unlock_exclusive(e, held, /*bump_version=*/false);
  EXPECT_EQ(load(e).raw, EntryWord::make(12, 40, kUnlocked).raw);

  ASSERT_TRUE(try_lock_exclusive(e, load(e)));
  held = load(e);
  unlock_exclusive(e, held, /*bump_version=*/true);
  EXPECT_EQ(load(e).raw, EntryWord::make(12, 41, kUnlocked).raw);

  // Bump at the top of the version range wraps to 0 and leaves the frame alone.
  Entry top{EntryWord::make(0xFFFFFFFFu, kVersionMask, kUnlocked).raw};
  ASSERT_TRUE(try_lock_exclusive(top, load(top)));
  unlock_exclusive(top, load(top), true);
  EXPECT_EQ(load(top).raw, EntryWord::make(0xFFFFFFFFu, 0, kUnlocked).raw);
}

// N readers hammer shared pins while one writer takes the exclusive latch and bumps the
// version. The latch must give the writer exclusion (checked with a plain, non-atomic
// payload that TSan watches) and the end state must count every exclusive section.
TEST(EntryLatch, ConcurrentSharedAndExclusive) {
  constexpr int kReaders = 4;
  constexpr uint32_t kExclusiveSections = 100000;
  constexpr FrameId kFrame = 0xABCDu;
  constexpr uint32_t kStartVersion = kVersionMask - 1000;  // the run crosses the wrap
  // All threads start together, so readers and the writer really overlap.
  std::latch ready(kReaders + 1);  // all threads start together
  auto start_gate = [&] {
    ready.arrive_and_wait();
  };

  Entry e{EntryWord::make(kFrame, kStartVersion, kUnlocked).raw};
  uint64_t payload = 0;  // written only under the exclusive latch, read under shared pins
  std::atomic<bool> writer_done{false};
  std::atomic<int> readers_inside{0};
  std::atomic<int> violations{0};
  std::atomic<uint64_t> pins{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      start_gate();
      uint64_t local_pins = 0;
      while (!writer_done.load(std::memory_order_acquire) || local_pins < 1000) {
        EntryWord seen = load(e);
        if (!try_lock_shared(e, seen)) {
          std::this_thread::yield();
          continue;
        }
        ++local_pins;
        readers_inside.fetch_add(1);
        EntryWord now = load(e);
        if (now.frame() != kFrame || !now.shared()) violations.fetch_add(1);
        uint64_t p1 = payload;
        // While pinned the version and payload cannot change.
        if (load(e).frame_and_version() != seen.frame_and_version()) violations.fetch_add(1);
        if (payload != p1) violations.fetch_add(1);
        readers_inside.fetch_sub(1);
        unlock_shared(e);
      }
      pins.fetch_add(local_pins);
    });
  }
  threads.emplace_back([&] {
    start_gate();
    uint32_t done = 0;
    while (done < kExclusiveSections) {
      EntryWord seen = load(e);
      if (!try_lock_exclusive(e, seen)) {
        std::this_thread::yield();
        continue;
      }
      EntryWord held = load(e);
      if (held.state() != kExclusive || held.frame() != kFrame) violations.fetch_add(1);
      if (readers_inside.load() != 0) violations.fetch_add(1);
      ++payload;
      unlock_exclusive(e, held, /*bump_version=*/true);
      ++done;
    }
    writer_done.store(true, std::memory_order_release);
  });
  for (auto& t : threads) t.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(payload, kExclusiveSections);
  EXPECT_GE(pins.load(), uint64_t{1000} * kReaders);
  EntryWord end = load(e);
  EXPECT_EQ(end.state(), kUnlocked);
  EXPECT_EQ(end.frame(), kFrame);
  EXPECT_EQ(end.version(), (kStartVersion + kExclusiveSections) & kVersionMask);
  EXPECT_LT(end.version(), kStartVersion) << "the test is meant to cross the 2^24 wrap";
}

}  // namespace
}  // namespace calico::translation
