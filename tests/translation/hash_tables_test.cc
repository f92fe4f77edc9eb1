// Tests for the hash-table translations (translation/hash/hash_chained.h, hash_open.h,
// hash_lockfree.h): find-or-insert returns one stable entry per block, also under concurrent
// inserts of overlapping blocks; the lock-free table's sizing rule and its full error;
// the partitioned tables delete zero entries (forget) and recycle them, so their memory
// follows the live entries, and a latch taken through a stale pointer is never mistaken for
// the block's (entry.h, "Recycled entries"); reset; the pool reports the memory. The pool
// side of deletion is in hash_recycling_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/error.h"
#include "support/test_util.h"
#include "translation/hash/entry_slab.h"
#include "translation/hash/hash_chained.h"
#include "translation/hash/hash_lockfree.h"
#include "translation/hash/hash_open.h"

namespace calico::translation {
namespace {

constexpr uint64_t kSeed = 0x4A5417;  // fixed so a failure replays
constexpr uint64_t kCapacity = uint64_t{1} << 20;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kKeys = 20'000;  // sanitizer builds run ~10x slower
#else
constexpr uint32_t kKeys = 100'000;
#endif

PoolOptions no_options() { return PoolOptions{}; }

// Blocks spread over the capacity, in a random order, no duplicates.
std::vector<BlockId> random_blocks(uint32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::unordered_set<BlockId> seen;
  std::vector<BlockId> out;
  while (out.size() < n) {
    BlockId b = static_cast<BlockId>(rng() % kCapacity);
    if (seen.insert(b).second) out.push_back(b);
  }
  return out;
}

// --- every table ------------------------------------------------------------------------

template <class Table>
class HashTable : public ::testing::Test {};
using Tables = ::testing::Types<PartitionedTable<ChainedStore>, PartitionedTable<OpenStore>, LockFreeHashTable>;
struct TableName {
  template <class T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, PartitionedTable<ChainedStore>>) return "chained";
    if constexpr (std::is_same_v<T, PartitionedTable<OpenStore>>) return "open";
    return "lockfree";
  }
};
TYPED_TEST_SUITE(HashTable, Tables, TableName);

TYPED_TEST(HashTable, RejectsBadCapacities) {
  for (uint64_t cap : {uint64_t{0}, (uint64_t{1} << 32) + 1, ~uint64_t{0}}) {
    try {
      TypeParam t(cap, no_options());
      ADD_FAILURE() << "capacity " << cap << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

TYPED_TEST(HashTable, FindOrInsertReturnsStableZeroEntries) {
  TypeParam t(kCapacity, no_options());
  EXPECT_EQ(t.capacity(), kCapacity);
  EXPECT_EQ(t.size(), 0u);
  std::vector<BlockId> blocks = random_blocks(kKeys, kSeed);
  std::vector<Entry*> first;
  for (BlockId b : blocks) {
    Entry& e = t.entry(b);
    ASSERT_EQ(e.load(), 0u) << "a new entry reads evicted";
    e.store(EntryWord::make(b + 1, 3, kUnlocked).raw);  // frame b + 1 marks the block
    first.push_back(&e);
  }
  EXPECT_EQ(t.size(), blocks.size());
  // Every later lookup (after the maps grew many times) finds the same object and its value.
  for (size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_EQ(&t.entry(blocks[i]), first[i]) << "block " << blocks[i];
    ASSERT_EQ(load(*first[i]).frame(), blocks[i] + 1);
  }
  EXPECT_EQ(std::set<Entry*>(first.begin(), first.end()).size(), blocks.size()) << "one entry per block";
  EXPECT_EQ(t.size(), blocks.size()) << "lookups do not insert";
  // for_each_entry visits every block once, with its entry.
  std::unordered_set<BlockId> visited;
  t.for_each_entry([&](BlockId b, const Entry& e) {
    EXPECT_TRUE(visited.insert(b).second) << "block " << b << " visited twice";
    EXPECT_EQ(load(e).frame(), b + 1);
  });
  EXPECT_EQ(visited.size(), blocks.size());
  // Extremes of the block range.
  TypeParam full(uint64_t{1} << 32, no_options());
  Entry& last = full.entry(0xFFFFFFFFu);
  Entry& zero = full.entry(0);
  EXPECT_NE(&last, &zero);
  EXPECT_EQ(&full.entry(0xFFFFFFFFu), &last);
  EXPECT_EQ(&full.entry(0), &zero);
}

// Several threads insert the same blocks in different orders: each block gets exactly one
// entry, and every thread gets that entry. Each thread adds 1 to every entry it gets, so an
// entry that two threads saw as different objects would show a count below the threads.
TYPED_TEST(HashTable, ConcurrentOverlappingInsertsYieldOneEntryPerBlock) {
  TypeParam t(kCapacity, no_options());
  constexpr int kThreads = 6;
  const uint32_t n = kKeys / 4;
  std::vector<BlockId> blocks = random_blocks(n, kSeed + 1);
  std::vector<std::vector<Entry*>> got(kThreads, std::vector<Entry*>(n));
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      // Half the threads go forward, half backward, each from its own offset, so that inserts
      // of one block collide.
      std::vector<uint32_t> order(n);
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t k = (i + id * n / kThreads) % n;
        order[i] = id % 2 == 0 ? k : n - 1 - k;
      }
      start.arrive_and_wait();
      for (uint32_t i : order) {
        Entry& e = t.entry(blocks[i]);
        e.fetch_add(1, std::memory_order_relaxed);
        got[id][i] = &e;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), n);
  std::set<Entry*> distinct;
  for (uint32_t i = 0; i < n; ++i) {
    for (int id = 1; id < kThreads; ++id) ASSERT_EQ(got[id][i], got[0][i]) << "block " << blocks[i];
    ASSERT_EQ(got[0][i]->load(), uint64_t{kThreads}) << "block " << blocks[i];
    ASSERT_EQ(&t.entry(blocks[i]), got[0][i]);
    distinct.insert(got[0][i]);
  }
  EXPECT_EQ(distinct.size(), n);
}

TYPED_TEST(HashTable, MemoryGrowsWithPagesTouched) {
  TypeParam t(kCapacity, no_options());
  const size_t empty = t.private_bytes(kCapacity);
  std::vector<BlockId> blocks = random_blocks(kKeys, kSeed + 2);
  size_t previous = empty;
  for (uint32_t i = 0; i < kKeys; ++i) {
    t.entry(blocks[i]).store(EntryWord::make(1, 0, kUnlocked).raw);  // written: backed
    if ((i + 1) % (kKeys / 4) == 0) {
      size_t now = t.private_bytes(kCapacity);
      EXPECT_GT(now, previous) << "after " << i + 1 << " blocks";
      previous = now;
    }
  }
  EXPECT_LE(t.private_bytes(kCapacity), t.mincore_bytes(kCapacity));
  EXPECT_LE(t.mincore_bytes(kCapacity), t.reserved_bytes());
  // Lookups of existing blocks allocate nothing.
  size_t before = t.private_bytes(kCapacity);
  for (BlockId b : blocks) t.entry(b);
  EXPECT_EQ(t.private_bytes(kCapacity), before);
}

// --- partitioned tables: exact accounting -------------------------------------------------

template <class Table>
size_t grown_bytes(Table& t, uint32_t n) {
  size_t base = t.private_bytes(0);
  for (BlockId b = 0; b < n; ++b) t.entry(b);
  return t.private_bytes(0) - base;
}

TEST(HashChained, MemoryIsNodesAndBuckets) {
  PartitionedTable<ChainedStore> t(kCapacity, no_options());
  // Empty: the partition array only (64 cache-line aligned partitions; empty maps allocate
  // nothing).
  EXPECT_EQ(t.private_bytes(0), t.reserved_bytes());
  EXPECT_EQ(t.private_bytes(0), 64 * 192u);  // latch, counter, map and free list: 3 lines
  const uint32_t n = kKeys;
  size_t bytes = grown_bytes(t, n);
  // 32-byte nodes (the 16-byte OwnedEntry inside), and at least one 8-byte bucket per node
  // (max load factor 1), at most about 2.2 (libstdc++ grows to the next prime past 2x).
  EXPECT_GE(bytes, size_t{n} * (32 + 8));
  EXPECT_LE(bytes, size_t{n} * (32 + 8 * 3));
}

TEST(HashOpen, MemoryIsSlotsControlBytesAndSlab) {
  PartitionedTable<OpenStore> t(kCapacity, no_options());
  const uint32_t n = kKeys;
  size_t bytes = grown_bytes(t, n);
  // Slab: 16 bytes per entry and 8 of free list reserved for it (chunk slack at most one
  // 512-entry chunk per partition). Map: 16-byte slots plus a control byte at a load between
  // 7/16 and 7/8.
  EXPECT_GE(bytes, size_t{n} * 24 + size_t{n} * 17 * 8 / 7);
  EXPECT_LE(bytes, size_t{n} * 24 + 64 * 512 * 24 + size_t{n} * 17 * 16 / 7 + 64 * 64);
}

// The map's slots follow its content; the slab's entries (and their free-list room) stay.
TEST(HashOpen, MapShrinksWhenAQuarterFullAndTheSlabStays) {
  PartitionedTable<OpenStore> t(kCapacity, no_options());
  const uint32_t n = kKeys;
  const size_t base = t.private_bytes(0);
  const size_t grown = grown_bytes(t, n);
  // Retire 7/8 of the entries (zero: as evicted pages), keep every 8th.
  for (BlockId b = 0; b < n; ++b) {
    if (b % 8 != 0) {
      ASSERT_TRUE(t.forget(b));
    }
  }
  EXPECT_EQ(t.size(), n / 8);
  const size_t shrunk = t.private_bytes(0) - base;
  // Before: at least n slots of 17 bytes at load 7/8 or less. After: a map rehashed when a
  // quarter full, so at most 4 slots per kept entry (and the 127-slot floor per partition).
  // The slab and its free list (24 bytes per entry created) stay.
  EXPECT_LE(shrunk, size_t{n} * 24 + 64 * 512 * 24 + size_t{n} / 8 * 4 * 17 + 64 * 128 * 17);
  EXPECT_GE(grown - shrunk, size_t{n} * 17 * 8 / 7 - size_t{n} / 8 * 4 * 17 - 64 * 128 * 17);
  // The kept entries are still found, still theirs; the retired blocks are gone.
  for (BlockId b = 0; b < n; ++b) {
    Entry* e = t.find(b);
    if (b % 8 == 0) {
      ASSERT_NE(e, nullptr) << "block " << b;
      ASSERT_TRUE(owned_by(*e, b));
    } else {
      ASSERT_EQ(e, nullptr) << "block " << b;
    }
  }
  // Inserting them again recycles the slab's entries: the map regrows, the slab does not.
  for (BlockId b = 0; b < n; ++b) t.entry(b);
  EXPECT_EQ(t.free_size(), 0u);
  EXPECT_LE(t.private_bytes(0) - base, grown + 64 * 512 * 24);
}

template <class Table>
void reset_retires_entries_and_keeps_memory() {
  Table t(kCapacity, no_options());
  std::vector<Entry*> got;
  for (BlockId b = 0; b < 1000; ++b) got.push_back(&t.entry(b));
  const size_t bytes = t.private_bytes(0);
  t.reset();
  // The memory stays (stale threads may hold the entries; hash_open's maps of ~16 entries
  // are below the size it shrinks); each old pointer reads kGone, so
  // its holder looks the block up again. Only the free lists may grow (hash_chained keeps a
  // 32-byte node handle per free node, in a vector grown 2x + 16 per partition).
  const size_t after_reset = t.private_bytes(0);
  EXPECT_GE(after_reset, bytes);
  EXPECT_LE(after_reset, bytes + 1000 * 3 * 32 + 64 * 16 * 32);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.free_size(), 1000u);
  for (BlockId b = 0; b < 1000; ++b) ASSERT_EQ(load(*got[b]).raw, kGoneWord.raw);
  size_t visited = 0;
  t.for_each_entry([&](BlockId, const Entry&) { ++visited; });
  EXPECT_EQ(visited, 0u);
  // Later lookups recycle the same objects: zero, owned by their block, no new memory. (Free
  // entries are per partition: the same blocks find exactly as many as they need.)
  std::set<Entry*> old(got.begin(), got.end());
  for (BlockId b = 0; b < 1000; ++b) {
    Entry& e = t.entry(b);
    ASSERT_EQ(old.erase(&e), 1u) << "block " << b << " got a new entry while retired ones wait";
    ASSERT_EQ(e.load(), 0u);
    ASSERT_TRUE(owned_by(e, b));
  }
  EXPECT_EQ(t.free_size(), 0u);
  EXPECT_EQ(t.private_bytes(0), after_reset) << "recycling allocates nothing";
}

TEST(HashChained, ResetRetiresEntriesAndKeepsMemory) {
  reset_retires_entries_and_keeps_memory<PartitionedTable<ChainedStore>>();
}
TEST(HashOpen, ResetRetiresEntriesAndKeepsMemory) {
  reset_retires_entries_and_keeps_memory<PartitionedTable<OpenStore>>();
}

TEST(EntrySlab, ChunksDoubleNeverMoveAndRecycle) {
  ByteCounter counter;
  {
    EntrySlab slab(&counter);
    EXPECT_EQ(slab.size(), 0u);
    std::vector<OwnedEntry*> got;
    for (int i = 0; i < 5000; ++i) {
      OwnedEntry& e = slab.take();
      ASSERT_EQ(e.word.load(), 0u);
      ASSERT_EQ(e.owner.load(), 0u);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(&e) % 16, 0u) << "an entry never straddles a cache line";
      e.owner.store(static_cast<uint64_t>(i) + 1);
      got.push_back(&e);
    }
    EXPECT_EQ(slab.size(), 5000u);
    int i = 0;
    slab.for_each([&](OwnedEntry& e) {
      ASSERT_EQ(&e, got[i]);
      ASSERT_EQ(e.owner.load(), static_cast<uint64_t>(i) + 1);
      ++i;
    });
    EXPECT_EQ(i, 5000);
    // 16 + 32 + ... + 512 = 1008, then 512-entry chunks: 1008 + 8 x 512 = 5104 >= 5000; the
    // free list has room for all of them.
    const size_t grown = 5104 * (sizeof(OwnedEntry) + sizeof(void*));
    EXPECT_GE(counter.bytes(), grown);
    EXPECT_LE(counter.bytes(), grown + 64 * sizeof(void*) * 2);
    // Given back entries come out again, newest first, and cost no memory.
    const size_t bytes = counter.bytes();
    for (int j = 0; j < 100; ++j) {
      got[j]->word.store(kGoneWord.raw);
      slab.give_back(*got[j]);
    }
    EXPECT_EQ(slab.free_size(), 100u);
    for (int j = 99; j >= 0; --j) ASSERT_EQ(&slab.take(), got[j]);
    EXPECT_EQ(slab.free_size(), 0u);
    EXPECT_EQ(slab.size(), 5000u);
    EXPECT_EQ(counter.bytes(), bytes);
  }
  EXPECT_EQ(counter.bytes(), 0u) << "every chunk returned";
}

// --- partitioned tables: deletion and recycling ---------------------------------------------

template <class Table>
class RecyclingTable : public ::testing::Test {};
using RecyclingTables = ::testing::Types<PartitionedTable<ChainedStore>, PartitionedTable<OpenStore>>;
TYPED_TEST_SUITE(RecyclingTable, RecyclingTables, TableName);

// forget() deletes zero entries only; deleted ones read kGone, are found no more, and are
// given to the next blocks inserted, owner first.
TYPED_TEST(RecyclingTable, ForgetRetiresOnlyZeroEntries) {
  static_assert(TypeParam::kRecyclesEntries);
  TypeParam t(kCapacity, no_options());
  std::vector<BlockId> blocks = random_blocks(2000, kSeed + 3);
  std::vector<Entry*> got;
  for (BlockId b : blocks) {
    got.push_back(&t.entry(b));
    ASSERT_TRUE(owned_by(*got.back(), b));
    ASSERT_FALSE(owned_by(*got.back(), b + 1));
  }
  for (size_t i = 0; i < blocks.size(); i += 2) got[i]->store(EntryWord::make(7, 1, kUnlocked).raw);  // "resident"
  size_t retired = 0;
  for (BlockId b : blocks) retired += t.forget(b);
  EXPECT_EQ(retired, blocks.size() / 2);
  EXPECT_FALSE(t.forget(blocks[1])) << "already gone";
  EXPECT_FALSE(t.forget(static_cast<BlockId>(kCapacity - 1))) << "never inserted";
  EXPECT_EQ(t.size(), blocks.size() / 2);
  EXPECT_EQ(t.free_size(), blocks.size() / 2);
  std::set<Entry*> gone;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i % 2 == 0) {
      ASSERT_EQ(t.find(blocks[i]), got[i]);
      ASSERT_EQ(&t.entry(blocks[i]), got[i]);
      ASSERT_TRUE(owned_by(*got[i], blocks[i]));
    } else {
      ASSERT_EQ(t.find(blocks[i]), nullptr);
      ASSERT_EQ(load(*got[i]).raw, kGoneWord.raw);
      gone.insert(got[i]);
    }
  }
  // New blocks take the retired entries: same objects, zero, owned by the new block. Free
  // entries are kept per partition, so each retired block is replaced by a new block of the
  // same partition (the top bits of mix64).
  const size_t bytes = t.private_bytes(0);
  std::set<BlockId> used(blocks.begin(), blocks.end());
  BlockId next = 0;
  for (size_t i = 1; i < blocks.size(); i += 2) {
    const uint64_t partition = mix64(blocks[i]) >> (64 - TypeParam::kPartitionBits);
    while (used.count(next) || mix64(next) >> (64 - TypeParam::kPartitionBits) != partition) ++next;
    BlockId nb = next++;
    Entry& e = t.entry(nb);
    ASSERT_EQ(gone.erase(&e), 1u) << "block " << nb;
    ASSERT_EQ(e.load(), 0u);
    ASSERT_TRUE(owned_by(e, nb));
  }
  EXPECT_EQ(t.free_size(), 0u);
  // A map may rehash on insert (erased slots of an open table are reclaimed by growth), but
  // no entry memory is added: at most the maps' arrays.
  EXPECT_LE(t.private_bytes(0), bytes + blocks.size() * 16);
}

// A window of live blocks slides over many more blocks (a pool evicting): the table holds the
// window, and its memory stops growing once the window has been seen.
TYPED_TEST(RecyclingTable, MemoryFollowsLiveEntriesNotBlocksTouched) {
  TypeParam t(kCapacity, no_options());
  constexpr uint32_t kWindow = 512;
  constexpr uint32_t kKeys = 100'000;  // not scaled down for sanitizers: the bounds need it
  std::vector<BlockId> blocks = random_blocks(kKeys, kSeed + 4);
  size_t after_quarter = 0, after_half = 0;
  for (uint32_t i = 0; i < kKeys; ++i) {
    t.entry(blocks[i]);
    if (i >= kWindow) {
      ASSERT_TRUE(t.forget(blocks[i - kWindow]));
    }
    ASSERT_LE(t.size(), kWindow);
    if (i + 1 == kKeys / 4) after_quarter = t.private_bytes(0);
    if (i + 1 == kKeys / 2) after_half = t.private_bytes(0);
  }
  EXPECT_EQ(t.size(), kWindow);
  const size_t end = t.private_bytes(0);
  // Memory is the sum of the partitions' peaks (entries are recycled per partition), which
  // creep up slowly as the window wanders: bounded per live entry, and nearly flat late.
  EXPECT_LE(end, after_half + after_half / 4);
  EXPECT_LE(end, size_t{kWindow} * 512);
  // Versus a table that never deletes: kKeys entries of at least 32 bytes.
  EXPECT_LT(end * 10, size_t{kKeys} * 32);
  std::printf("window %u over %u blocks: %zu bytes (%zu after a quarter, %zu after half), %zu free entries\n",
              kWindow, kKeys, end, after_quarter, after_half, t.free_size());
}

// The protocol of entry.h R2-R4 without a pool: threads look a block up, latch its entry
// (CAS 0 -> loading), check the owner, "load" and "evict" (store 0, forget), while others do
// the same on the same few blocks. A per-block holder count proves that two threads never
// believe they latched the same block at once, although entries keep moving between blocks.
TYPED_TEST(RecyclingTable, StalePointersNeverLatchAnotherBlock) {
  TypeParam t(kCapacity, no_options());
  constexpr int kThreads = 4;
  constexpr BlockId kBlocks = 24;  // few blocks, so that every CAS races
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  constexpr int kRounds = 20'000;
#else
  constexpr int kRounds = 200'000;
#endif
  std::vector<std::atomic<int>> holders(kBlocks);
  std::atomic<uint64_t> latched{0}, foreign{0}, gone_seen{0}, violations{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937_64 rng(kSeed + 10 + id);
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        BlockId b = static_cast<BlockId>(rng() % kBlocks);
        Entry* e = &t.entry(b);
        if (rng() % 4 == 0) std::this_thread::yield();  // widen the window of a stale pointer
        EntryWord w = load(*e);
        if (w.state() == kGone) {
          gone_seen.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (!w.evicted() || !try_cas(*e, w, kLoadingWord)) continue;
        if (!owned_by(*e, b)) {  // R4: recycled for another block; give it back
          foreign.fetch_add(1, std::memory_order_relaxed);
          e->store(0, std::memory_order_release);
          continue;
        }
        if (holders[b].fetch_add(1) != 0) violations.fetch_add(1);
        latched.fetch_add(1, std::memory_order_relaxed);
        e->store(EntryWord::make(static_cast<FrameId>(b) + 1, 1, kExclusive).raw, std::memory_order_release);
        if (t.find(b) != e) violations.fetch_add(1);  // a latched entry is its block's
        holders[b].fetch_sub(1);
        e->store(0, std::memory_order_release);  // evicted
        t.forget(b);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_GT(latched.load(), 1000u);
  std::printf("latched %lu, foreign latches given back %lu, gone seen %lu\n", (unsigned long)latched.load(),
              (unsigned long)foreign.load(), (unsigned long)gone_seen.load());
  size_t n = 0;
  t.for_each_entry([&](BlockId b, const Entry& e) {
    ++n;
    EXPECT_TRUE(owned_by(e, b));
    EXPECT_EQ(e.load(), 0u);
  });
  EXPECT_LE(n, kBlocks);
}

// --- the lock-free table -----------------------------------------------------------------

TEST(HashLockFree, SizingRule) {
  LockFreeHashTable small(1000, no_options());
  EXPECT_EQ(small.slots(), 2048u);  // the power of two >= 2 x capacity
  EXPECT_EQ(small.max_size(), 1536u);
  EXPECT_EQ(small.reserved_bytes(), 2048u * 16);
  LockFreeHashTable one(1, no_options());
  EXPECT_EQ(one.slots(), 4u);  // the minimum
  EXPECT_EQ(one.max_size(), 3u);
  EXPECT_EQ(&one.entry(0), &one.entry(0));
  LockFreeHashTable big(uint64_t{1} << 32, no_options());
  EXPECT_EQ(big.slots(), LockFreeHashTable::kMaxSlots);
  EXPECT_EQ(big.max_size(), LockFreeHashTable::kMaxSlots / 4 * 3);
  EXPECT_EQ(big.private_bytes(0), 0u) << "reserved, not backed";
  for (uint64_t bad : {uint64_t{0}, uint64_t{2}, uint64_t{48}, uint64_t{1} << 33}) {
    try {
      LockFreeHashTable t(1000, bad);
      ADD_FAILURE() << "slot limit " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

TEST(HashLockFree, FullTableRefusesNewBlocksOnly) {
  LockFreeHashTable t(1000, /*max_slots=*/64);
  ASSERT_EQ(t.slots(), 64u);
  ASSERT_EQ(t.max_size(), 48u);
  std::vector<Entry*> got;
  for (BlockId b = 0; b < 48; ++b) got.push_back(&t.entry(b));
  for (BlockId b = 48; b < 60; ++b) {
    testing::expect_error(ErrorCode::kPoolFull, [&] { t.entry(b); });
  }
  EXPECT_EQ(t.size(), 48u);
  for (BlockId b = 0; b < 48; ++b) ASSERT_EQ(&t.entry(b), got[b]) << "existing blocks still found";
  // After a reset (drop) the table is empty again.
  t.reset();
  EXPECT_EQ(t.size(), 0u);
  for (BlockId b = 100; b < 148; ++b) t.entry(b);
  testing::expect_error(ErrorCode::kPoolFull, [&] { t.entry(200); });
}

// Threads race to fill a small table with distinct and shared blocks: exactly max_size()
// blocks get a slot, each exactly one, and every other insert fails promptly (no hang, no
// overwrite).
TEST(HashLockFree, ConcurrentFillStopsAtTheLimit) {
  constexpr int kThreads = 6;
  for (int round = 0; round < 20; ++round) {
    LockFreeHashTable t(1 << 16, /*max_slots=*/256);
    std::latch start(kThreads);
    std::vector<std::vector<std::pair<BlockId, Entry*>>> got(kThreads);
    std::atomic<uint64_t> refused{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
      threads.emplace_back([&, id] {
        std::mt19937_64 rng(kSeed + round * kThreads + id);
        start.arrive_and_wait();
        for (int i = 0; i < 400; ++i) {
          BlockId b = static_cast<BlockId>(rng() % 600);  // overlapping between threads
          try {
            Entry& e = t.entry(b);
            got[id].emplace_back(b, &e);
          } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::kPoolFull);
            refused.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(t.size(), t.max_size());
    EXPECT_GT(refused.load(), 0u);
    std::map<BlockId, Entry*> owner;
    for (const auto& v : got) {
      for (auto [b, e] : v) {
        auto [it, fresh] = owner.emplace(b, e);
        ASSERT_EQ(it->second, e) << "block " << b << " has two entries";
      }
    }
    std::set<Entry*> distinct;
    for (auto [b, e] : owner) {
      ASSERT_EQ(&t.entry(b), e);
      distinct.insert(e);
    }
    EXPECT_EQ(distinct.size(), owner.size());
    EXPECT_EQ(owner.size(), t.max_size());
  }
}

TEST(HashLockFree, ResetReturnsMemory) {
  LockFreeHashTable t(kCapacity, no_options());
  for (BlockId b = 0; b < 2000; ++b) t.entry(b);
  EXPECT_GT(t.private_bytes(0), 2000u * 16);  // scattered: far more than the slots used
  t.reset();
  EXPECT_EQ(t.private_bytes(0), 0u);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.entry(5).load(), 0u);
  EXPECT_EQ(t.size(), 1u);
}

// --- in the pool: lock-free memory follows the pages touched --------------------------------
// (The partitioned tables delete on eviction: hash_recycling_test.cc.)

TEST(HashLockFree, PoolMemoryFollowsPagesTouched) {
  testing::TempDir dir;
  auto pool = BasicBufferPool<HashLockFreeTranslation>::open(testing::small_options(dir.path(), 16));
  SpaceId s = pool->create_space("s");
  const uint64_t pages = 2000;
  testing::fill_space(*pool, s, pages, [](uint64_t b) { return b; });
  testing::expect_space(*pool, s, pages, [](uint64_t b) { return b; });
  PoolStats st = pool->stats();
  EXPECT_LE(st.resident_pages, 16u);
  EXPECT_GE(st.translation_private_bytes, pages * 16);
  pool->check_invariants();
  pool->drop_space(s);
  pool->check_invariants();
}

}  // namespace
}  // namespace calico::translation
