// Tests for translation/translation_array: capacity checks, lazy backing, hole punching, reset.
#include "translation/array/translation_array.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "calico/error.h"

namespace calico::translation {
namespace {

constexpr uint64_t kSeed = 0xA77A7;  // fixed so a failure replays
constexpr size_t kPage = memory::kOsPageBytes;
constexpr uint64_t kGiB = uint64_t{1} << 30;

void expect_invalid_capacity(uint64_t capacity) {
  try {
    TranslationArray a(capacity);
    ADD_FAILURE() << "capacity " << capacity << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

EntryWord resident(FrameId f) { return EntryWord::make(f, 7, kUnlocked); }

TEST(TranslationArray, RejectsBadCapacities) {
  expect_invalid_capacity(0);
  expect_invalid_capacity((uint64_t{1} << 32) + 1);
  expect_invalid_capacity(uint64_t{1} << 40);
  expect_invalid_capacity(~uint64_t{0});
}

TEST(TranslationArray, SmallestCapacity) {
  TranslationArray a(1);
  EXPECT_EQ(a.capacity(), 1u);
  EXPECT_GE(a.reserved_bytes(), sizeof(Entry) + sizeof(PunchCounter));
  EXPECT_EQ(load(a.entry(0)).raw, 0u);
  a.acquire_ref(0);
  a.entry(0).store(resident(1).raw);
  EXPECT_EQ(a.group_count(0), 1u);
  a.entry(0).store(0);
  EXPECT_TRUE(a.release_ref(0));
  EXPECT_EQ(a.group_count(0), 0u);
}

TEST(TranslationArray, FullCapacityReservesAddressSpaceOnly) {
  const uint64_t cap = uint64_t{1} << 32;
  TranslationArray a(cap);
  EXPECT_EQ(a.capacity(), cap);
  EXPECT_GE(a.reserved_bytes(), 32 * kGiB);
  const BlockId last = 0xFFFFFFFFu;
  EXPECT_EQ(load(a.entry(last)).raw, 0u);
  EXPECT_EQ(a.group_count(last), 0u);

  // The last block is usable through the whole protocol, and so is block 0.
  for (BlockId b : {last, BlockId{0}}) {
    a.acquire_ref(b);
    EXPECT_EQ(a.group_count(b), 1u);
    a.entry(b).store(resident(b | 1).raw);
    EXPECT_EQ(load(a.entry(b)).frame(), b | 1);
    a.entry(b).store(0);
    EXPECT_TRUE(a.release_ref(b));
    EXPECT_EQ(a.group_count(b), 0u);
    EXPECT_EQ(load(a.entry(b)).raw, 0u);
  }
  // Only the counter pages of the touched groups stay private; all entries were punched.
  // (Measured over the first 64 Ki groups only: a pagemap scan of all 32 GiB is slow.)
  EXPECT_EQ(a.private_bytes(kEntriesPerGroup * 65536), kPage);
}

TEST(TranslationArray, FreshEntriesReadZeroAndCostNoPrivateMemory) {
  const uint64_t cap = uint64_t{1} << 20;  // 2048 groups, 8 MiB of entries
  TranslationArray a(cap);
  EXPECT_EQ(a.private_bytes(cap), 0u);
  uint64_t sum = 0;
  for (uint64_t b = 0; b < cap; b += 7) sum |= load(a.entry(static_cast<BlockId>(b))).raw;
  for (uint64_t g = 0; g < cap / kEntriesPerGroup; ++g) {
    sum |= a.group_count(static_cast<BlockId>(g * kEntriesPerGroup));
  }
  EXPECT_EQ(sum, 0u);
  EXPECT_EQ(a.private_bytes(cap), 0u) << "reading maps only the shared zero page";
  EXPECT_GE(a.mincore_bytes(cap), a.private_bytes(cap));
  // mincore cannot report more than the entry pages and the two counter pages.
  EXPECT_LE(a.mincore_bytes(cap), cap * sizeof(Entry) + 2 * kPage);
}

TEST(TranslationArray, WritingEntriesCostsOnePagePerTouchedGroup) {
  const uint64_t cap = 64 * kEntriesPerGroup;
  TranslationArray a(cap);
  ASSERT_EQ(a.private_bytes(cap), 0u);
  // Two entries in group 0 cost one page.
  a.entry(0).store(resident(1).raw);
  a.entry(kEntriesPerGroup - 1).store(resident(2).raw);
  EXPECT_EQ(a.private_bytes(cap), 1 * kPage);
  // Groups 5, 6 and the last one.
  a.entry(5 * kEntriesPerGroup + 3).store(resident(3).raw);
  EXPECT_EQ(a.private_bytes(cap), 2 * kPage);
  a.entry(6 * kEntriesPerGroup).store(resident(4).raw);
  a.entry(cap - 1).store(resident(5).raw);
  EXPECT_EQ(a.private_bytes(cap), 4 * kPage);
  EXPECT_GE(a.mincore_bytes(cap), a.private_bytes(cap));
  // private_bytes(limit) only looks below limit.
  EXPECT_EQ(a.private_bytes(kEntriesPerGroup), 1 * kPage);
  EXPECT_EQ(a.private_bytes(6 * kEntriesPerGroup), 2 * kPage);
}

TEST(TranslationArray, LastReleasePunchesTheGroup) {
  const uint64_t cap = 16 * kEntriesPerGroup;
  TranslationArray a(cap);
  const BlockId b = 3 * kEntriesPerGroup + 10;
  const BlockId b2 = 3 * kEntriesPerGroup + 500;

  a.acquire_ref(b);
  const size_t with_counter = a.private_bytes(cap);  // the counter page is written now
  a.entry(b).store(resident(1).raw);
  a.acquire_ref(b2);
  a.entry(b2).store(resident(2).raw);
  EXPECT_EQ(a.group_count(b), 2u);
  EXPECT_EQ(a.private_bytes(cap), with_counter + kPage);

  // Evict b: not the last reference, so nothing is punched and b2 survives.
  a.entry(b).store(0);
  EXPECT_FALSE(a.release_ref(b));
  EXPECT_EQ(a.group_count(b), 1u);
  EXPECT_EQ(load(a.entry(b2)).raw, resident(2).raw);
  EXPECT_EQ(a.private_bytes(cap), with_counter + kPage);

  // Evict b2: the last reference punches the page of entries.
  a.entry(b2).store(0);
  EXPECT_TRUE(a.release_ref(b2));
  EXPECT_EQ(a.group_count(b), 0u);
  EXPECT_EQ(a.private_bytes(cap), with_counter);
  for (size_t i = 0; i < kEntriesPerGroup; ++i) {
    ASSERT_EQ(load(a.entry(3 * kEntriesPerGroup + i)).raw, 0u) << i;
  }
  // The group can be filled again after the punch.
  a.acquire_ref(b);
  a.entry(b).store(resident(9).raw);
  EXPECT_EQ(load(a.entry(b)).raw, resident(9).raw);
  EXPECT_EQ(a.private_bytes(cap), with_counter + kPage);
}

// A thread that loaded an entry resident and CASes it after the page was evicted and punched:
// the CAS fails, but it writes (x86's LOCK CMPXCHG always does), so the kernel backs the page
// again, all zero, with no reference counted to punch it later. repunch() returns it when
// nothing references the group, and leaves a referenced group alone.
TEST(TranslationArray, AFailedCasOnAPunchedPageBacksItAndRepunchReturnsIt) {
  const uint64_t cap = 4 * kEntriesPerGroup;
  TranslationArray a(cap);
  const BlockId b = kEntriesPerGroup + 3;
  a.acquire_ref(b);
  a.entry(b).store(resident(1).raw);
  const EntryWord loaded = load(a.entry(b));  // a pin's load, before the eviction
  a.entry(b).store(0);
  ASSERT_TRUE(a.release_ref(b));
  ASSERT_FALSE(a.page_backed(b));
  EXPECT_FALSE(try_lock_shared(a.entry(b), loaded)) << "the stale CAS fails";
  ASSERT_TRUE(a.page_backed(b)) << "a failing CAS backs the punched page (the defect repunch repairs)";
  EXPECT_TRUE(a.repunch(b));
  EXPECT_FALSE(a.page_backed(b));
  EXPECT_EQ(a.group_count(b), 0u);
  // A referenced group is left alone: its last release punches it.
  a.acquire_ref(b);
  EXPECT_FALSE(try_lock_shared(a.entry(b + 1), loaded));
  EXPECT_FALSE(a.repunch(b));
  EXPECT_TRUE(a.page_backed(b));
  EXPECT_TRUE(a.release_ref(b));
  EXPECT_FALSE(a.page_backed(b));
}

TEST(TranslationArray, GroupCountTracksAcquireAndRelease) {
  TranslationArray a(4 * kEntriesPerGroup);
  for (int i = 0; i < 5; ++i) a.acquire_ref(static_cast<BlockId>(i));
  a.acquire_ref(kEntriesPerGroup - 1);  // still group 0
  a.acquire_ref(kEntriesPerGroup);      // group 1
  EXPECT_EQ(a.group_count(0), 6u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup - 1), 6u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), 1u);
  EXPECT_EQ(a.group_count(2 * kEntriesPerGroup), 0u);
  EXPECT_FALSE(a.release_ref(0));
  EXPECT_FALSE(a.release_ref(kEntriesPerGroup - 1));
  EXPECT_EQ(a.group_count(0), 4u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), 1u);
  EXPECT_TRUE(a.release_ref(kEntriesPerGroup + 17));  // any block of group 1
  EXPECT_EQ(a.group_count(kEntriesPerGroup), 0u);
  EXPECT_EQ(a.group_count(0), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(a.release_ref(1));
  EXPECT_TRUE(a.release_ref(1));
  EXPECT_EQ(a.group_count(0), 0u);
}

TEST(TranslationArray, GroupsAreIndependent) {
  const uint64_t cap = 8 * kEntriesPerGroup;
  TranslationArray a(cap);
  // Fill two neighbouring groups completely, each entry with its own reference.
  for (BlockId b = 0; b < 2 * kEntriesPerGroup; ++b) {
    a.acquire_ref(b);
    a.entry(b).store(resident(b + 1).raw);
  }
  EXPECT_EQ(a.group_count(0), kEntriesPerGroup);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), kEntriesPerGroup);
  const size_t full = a.private_bytes(cap);

  // Empty group 0; only the last release punches.
  int punched = 0;
  for (BlockId b = 0; b < kEntriesPerGroup; ++b) {
    a.entry(b).store(0);
    punched += a.release_ref(b);
  }
  EXPECT_EQ(punched, 1);
  EXPECT_EQ(a.group_count(0), 0u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), kEntriesPerGroup);
  EXPECT_EQ(a.private_bytes(cap), full - kPage);
  for (BlockId b = kEntriesPerGroup; b < 2 * kEntriesPerGroup; ++b) {
    ASSERT_EQ(load(a.entry(b)).raw, resident(b + 1).raw) << b;
  }
  // Group boundaries: block 511 and block 512 use different counters.
  a.acquire_ref(kEntriesPerGroup - 1);
  EXPECT_EQ(a.group_count(kEntriesPerGroup - 1), 1u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), kEntriesPerGroup);
  EXPECT_TRUE(a.release_ref(kEntriesPerGroup - 1));
}

TEST(TranslationArray, PartialLastGroup) {
  const uint64_t cap = 3 * kEntriesPerGroup + 5;  // the last group has 5 entries
  TranslationArray a(cap);
  EXPECT_GE(a.reserved_bytes(), cap * sizeof(Entry) + 4 * sizeof(PunchCounter));
  const BlockId last = static_cast<BlockId>(cap - 1);
  a.acquire_ref(last);
  const size_t with_counter = a.private_bytes(cap);
  a.entry(last).store(resident(42).raw);
  EXPECT_EQ(a.private_bytes(cap), with_counter + kPage);
  a.entry(last).store(0);
  EXPECT_TRUE(a.release_ref(last));
  EXPECT_EQ(a.private_bytes(cap), with_counter);
}

TEST(TranslationArray, ResetZeroesEverything) {
  const uint64_t cap = 32 * kEntriesPerGroup;
  TranslationArray a(cap);
  Entry* const before = a.entries();
  // Entries and counters in several groups (the state of a space being dropped).
  for (BlockId g = 0; g < 32; g += 3) {
    BlockId b = g * kEntriesPerGroup + g;
    a.acquire_ref(b);
    a.entry(b).store(resident(b + 1).raw);
  }
  ASSERT_GT(a.private_bytes(cap), 0u);
  a.reset();
  EXPECT_EQ(a.entries(), before) << "reset must keep the address (threads may hold it)";
  EXPECT_EQ(a.capacity(), cap);
  EXPECT_EQ(a.private_bytes(cap), 0u);
  EXPECT_EQ(a.mincore_bytes(cap), 0u) << "reset drops the page tables too";
  for (BlockId b = 0; b < cap; ++b) ASSERT_EQ(load(a.entry(b)).raw, 0u) << b;
  for (BlockId g = 0; g < 32; ++g) EXPECT_EQ(a.group_count(g * kEntriesPerGroup), 0u) << g;

  // Usable after reset.
  a.acquire_ref(5);
  a.entry(5).store(resident(6).raw);
  EXPECT_EQ(a.group_count(5), 1u);
  a.entry(5).store(0);
  EXPECT_TRUE(a.release_ref(5));
}

// The fault / evict protocol of entry.h + hole_punch_counter.h, driven by four threads over
// the blocks of two groups. Each resident entry holds one reference; a punch must never
// zero an entry that a thread has latched or made resident.
TEST(TranslationArray, ConcurrentFaultEvictKeepsInvariantI1) {
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 200000;
  constexpr BlockId kBlocks = 16;  // 8 in group 0, 8 in group 1
  auto block_of = [](uint64_t r) {
    BlockId i = static_cast<BlockId>(r % kBlocks);
    return i < 8 ? i * 37 : kEntriesPerGroup + (i - 8) * 41;
  };
  const uint64_t cap = 2 * kEntriesPerGroup;
  TranslationArray a(cap);
  std::atomic<int> violations{0};
  std::atomic<int> loads{0};
  std::latch ready(kThreads);  // all threads start together

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.arrive_and_wait();
      std::mt19937_64 rng(kSeed + t);
      for (int op = 0; op < kOpsPerThread; ++op) {
        uint64_t r = rng();
        BlockId b = block_of(r >> 8);
        Entry& e = a.entry(b);
        const FrameId frame = b + 1;
        switch (r % 3) {
          case 0: {  // fault: reference first, then the loading latch
            a.acquire_ref(b);
            if (try_cas(e, EntryWord{}, kLoadingWord)) {
              if (load(e).raw != kLoadingWord.raw) violations.fetch_add(1);
              loads.fetch_add(1);
              e.store(EntryWord::make(frame, 0, kUnlocked).raw, std::memory_order_release);
              // The reference now belongs to the resident entry.
            } else {
              a.release_ref(b);
            }
            break;
          }
          case 1: {  // evict: exclusive latch, zero, then give the reference back
            EntryWord w = load(e);
            if (try_lock_exclusive(e, w)) {
              if (load(e).raw != w.with_state(kExclusive).raw) violations.fetch_add(1);
              e.store(0, std::memory_order_release);
              a.release_ref(b);
            }
            break;
          }
          default: {  // read: a shared pin
            EntryWord w = load(e);
            if (try_lock_shared(e, w)) {
              EntryWord now = load(e);
              if (now.frame() != frame || !now.shared()) violations.fetch_add(1);
              unlock_shared(e);
            }
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(loads.load(), 0);
  // I1 at rest: each group's count equals its number of non-zero entries.
  for (BlockId g = 0; g < 2; ++g) {
    uint32_t nonzero = 0;
    for (BlockId i = 0; i < kEntriesPerGroup; ++i) {
      EntryWord w = load(a.entry(g * kEntriesPerGroup + i));
      if (!w.evicted()) {
        ++nonzero;
        EXPECT_EQ(w.state(), kUnlocked);
        EXPECT_EQ(w.frame(), g * kEntriesPerGroup + i + 1);
      }
    }
    EXPECT_EQ(a.group_count(g * kEntriesPerGroup), nonzero) << "group " << g;
  }
  // Evict the rest: both entry pages are punched, only the counter page stays private.
  for (BlockId b = 0; b < cap; ++b) {
    EntryWord w = load(a.entry(b));
    if (w.evicted()) continue;
    ASSERT_TRUE(try_lock_exclusive(a.entry(b), w));
    a.entry(b).store(0);
    a.release_ref(b);
  }
  EXPECT_EQ(a.group_count(0), 0u);
  EXPECT_EQ(a.group_count(kEntriesPerGroup), 0u);
  EXPECT_EQ(a.private_bytes(cap), kPage);
}

}  // namespace
}  // namespace calico::translation
