// LIPAH frame hints (src/translation/lipah.h; BasicBufferPool's *_hinted accesses,
// try_pin_exclusive, repair_hint) and the B+tree's hinted node format:
//  - a right hint skips the translation table (counted by a table that counts lookups);
//  - a stale, foreign, zero or out-of-range hint falls back and reports the real frame;
//  - readers with stale hints never get another page's bytes while a tiny pool evicts (on
//    lipah, and on array_hinted while pages of entries are hole-punched);
//  - try_pin_exclusive never waits nor faults; repairs do not dirty pages;
//  - B+tree descents use valid hints once warm and repair them after evictions; hinted and
//    plain trees refuse each other's spaces.
#include "translation/lipah.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/btree.h"
#include "pool/definitions.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::small_options;
using testing::TempDir;
using LipahPool = BasicBufferPool<translation::LipahTranslation>;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 4;
#else
constexpr int kScale = 1;
#endif

// A fallback table that counts its lookups: the evidence that a hinted access did not touch
// the translation. It hides TranslationArray::entries(), so every lookup goes through entry().
std::atomic<uint64_t> g_table_lookups{0};
struct CountingTable : translation::TranslationArray {
  using TranslationArray::TranslationArray;
  translation::Entry& entry(BlockId block) const {
    g_table_lookups.fetch_add(1, std::memory_order_relaxed);
    return TranslationArray::entry(block);
  }
  translation::Entry* entries() const = delete;
};
using CountingPool = BasicBufferPool<translation::BasicLipahTranslation<CountingTable>>;
static_assert(!translation::BasicLipahTranslation<CountingTable>::kFlatEntries);
static_assert(!translation::LipahTranslation::kFlatEntries);  // hash_open: every lookup hashes
static_assert(LipahPool::kFrameHints && CountingPool::kFrameHints && !BufferPool::kFrameHints);

auto stamp_of_block = [](uint64_t b) { return 1000 + b; };

// The frame that holds pid now (a hinted read with no hint falls back and reports it).
template <class Pool>
FrameId frame_of(Pool& pool, PageId pid) {
  FrameId f = kInvalidFrame;
  pool.read_optimistic_hinted(pid, &f);
  return f;
}

// Pins every page of `space` (pages blocks) twice: on a pool of fewer frames, every page of
// any other space is evicted.
template <class Pool>
void sweep(Pool& pool, SpaceId space, uint64_t pages) {
  for (int round = 0; round < 2; ++round) {
    for (uint64_t b = 0; b < pages; ++b) pool.pin_shared(PageId(space, static_cast<BlockId>(b)));
  }
}

TEST(Lipah, RightHintsSkipTheTable) {
  TempDir dir;
  auto pool = CountingPool::open(small_options(dir.path(), 64));
  SpaceId s = pool->create_space("s");
  const uint64_t pages = 16;
  testing::fill_space(*pool, s, pages, stamp_of_block);
  std::vector<FrameId> hints(pages, kInvalidFrame);
  for (uint64_t b = 0; b < pages; ++b) {
    hints[b] = frame_of(*pool, PageId(s, static_cast<BlockId>(b)));
    ASSERT_NE(hints[b], kInvalidFrame);
  }
  const PoolStats before = pool->stats();
  const uint64_t lookups_before = g_table_lookups.load();
  const int rounds = 10;
  for (int round = 0; round < rounds; ++round) {
    for (uint64_t b = 0; b < pages; ++b) {
      PageId pid(s, static_cast<BlockId>(b));
      FrameId h = hints[b];
      OptimisticRead r = pool->read_optimistic_hinted(pid, &h);
      ASSERT_EQ(h, hints[b]);
      ASSERT_TRUE(test::check_pattern_racy(r.data, pool->usable_page_size(), pid));
      ASSERT_TRUE(CountingPool::validate(r));
      SharedGuard g = pool->pin_shared_hinted(pid, &h);
      ASSERT_EQ(test::pattern_stamp(g.data()), stamp_of_block(b));
      g.release();
      ExclusiveGuard x = pool->pin_exclusive_hinted(pid, &h);
      ASSERT_TRUE(test::check_pattern(x.data(), pool->usable_page_size(), pid));
      ASSERT_EQ(h, hints[b]);
    }
  }
  EXPECT_EQ(g_table_lookups.load(), lookups_before) << "a right hint must not look anything up";
  const PoolStats after = pool->stats();
  const uint64_t hinted = 3 * rounds * pages;
  EXPECT_EQ(after.hints.hits - before.hints.hits, hinted);
  EXPECT_EQ(after.hints.misses, before.hints.misses);
  EXPECT_EQ(after.accesses - before.accesses, hinted) << "hinted hits are accesses too";
  // Without a hint, the same accesses go through the table, once each.
  FrameId none = kInvalidFrame;
  pool->read_optimistic_hinted(PageId(s, 3), &none);
  EXPECT_EQ(g_table_lookups.load(), lookups_before + 1);
  EXPECT_EQ(none, hints[3]);
  EXPECT_EQ(pool->stats().hints.misses, before.hints.misses + 1);
  pool->check_invariants();
}

TEST(Lipah, WrongHintsFallBackAndReportTheFrame) {
  TempDir dir;
  auto pool = LipahPool::open(small_options(dir.path(), 64));  // no eviction until the sweep
  SpaceId s = pool->create_space("s");
  SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, s, 2, stamp_of_block);
  testing::fill_space(*pool, other, 200, stamp_of_block);
  const PageId a(s, 0), b(s, 1);
  const size_t usable = pool->usable_page_size();
  FrameId fa = frame_of(*pool, a);
  FrameId fb = frame_of(*pool, b);
  ASSERT_NE(fa, fb);

  // Hints that name no frame holding the page: 0, past the last frame, the largest id,
  // another page's frame. Each falls back, returns the right page and reports its frame.
  for (FrameId wrong : {kInvalidFrame, pool->num_frames() + 1, FrameId{0xFFFFFFFFu}, fb}) {
    SCOPED_TRACE("hint " + std::to_string(wrong));
    const uint64_t misses = pool->stats().hints.misses;
    FrameId h = wrong;
    OptimisticRead r = pool->read_optimistic_hinted(a, &h);
    EXPECT_EQ(h, fa);
    EXPECT_TRUE(test::check_pattern_racy(r.data, usable, a));
    EXPECT_TRUE(LipahPool::validate(r));
    h = wrong;
    EXPECT_TRUE(test::check_pattern(pool->pin_shared_hinted(a, &h).data(), usable, a));
    EXPECT_EQ(h, fa);
    h = wrong;
    EXPECT_TRUE(test::check_pattern(pool->pin_exclusive_hinted(a, &h).data(), usable, a));
    EXPECT_EQ(h, fa);
    EXPECT_EQ(pool->stats().hints.misses, misses + 3);
  }

  // a is evicted and its frame reused by other pages; its hint now names a frame of another
  // page (or a free one). The hinted read faults a back in and reports the new frame.
  sweep(*pool, other, 200);
  const uint64_t faults = pool->stats().faults;
  FrameId h = fa;
  OptimisticRead r = pool->read_optimistic_hinted(a, &h);
  EXPECT_TRUE(test::check_pattern_racy(r.data, usable, a));
  EXPECT_TRUE(LipahPool::validate(r));
  EXPECT_EQ(pool->stats().faults, faults + 1);
  EXPECT_NE(h, kInvalidFrame);
  // The reported frame is a right hint from now on.
  const uint64_t hits = pool->stats().hints.hits;
  FrameId again = h;
  pool->read_optimistic_hinted(a, &again);
  EXPECT_EQ(again, h);
  EXPECT_EQ(pool->stats().hints.hits, hits + 1);
  pool->check_invariants();
}

TEST(Lipah, TryPinExclusiveNeverWaitsNorFaults) {
  TempDir dir;
  auto pool = LipahPool::open(small_options(dir.path(), 4));
  SpaceId s = pool->create_space("s");
  SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, s, 1, stamp_of_block);
  testing::fill_space(*pool, other, 12, stamp_of_block);
  const PageId a(s, 0);
  pool->pin_shared(a);  // resident

  {
    ExclusiveGuard g = pool->try_pin_exclusive(a);
    ASSERT_TRUE(g.held());
    EXPECT_EQ(g.page_id(), a);
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), a));
    // Latched: a second try (here by the same thread, which pin_exclusive would deadlock)
    // gives up at once.
    EXPECT_FALSE(pool->try_pin_exclusive(a).held());
  }
  {
    SharedGuard reader = pool->pin_shared(a);
    EXPECT_FALSE(pool->try_pin_exclusive(a).held()) << "a shared pin excludes it";
  }
  // Released: an optimistic read taken before a successful try no longer validates.
  OptimisticRead r = pool->read_optimistic(a);
  EXPECT_TRUE(pool->try_pin_exclusive(a).held());
  EXPECT_FALSE(LipahPool::validate(r));

  // Evicted: no fault, no frame, an empty guard.
  sweep(*pool, other, 12);
  const PoolStats st = pool->stats();
  EXPECT_FALSE(pool->try_pin_exclusive(a).held());
  EXPECT_EQ(pool->stats().faults, st.faults);
  expect_error(ErrorCode::kPageOutOfRange, [&] { pool->try_pin_exclusive(PageId(s, 1u << 20)); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->try_pin_exclusive(PageId(999, 0)); });
  pool->check_invariants();
}

TEST(Lipah, RepairHintWritesOnlyWhenTheLatchIsFreeAndNeverDirties) {
  TempDir dir;
  auto pool = LipahPool::open(small_options(dir.path(), 8));
  SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, 2, stamp_of_block);
  pool->flush();
  const PageId a(s, 0);
  const PoolStats st = pool->stats();
  int calls = 0;
  auto write_byte = [&](std::byte* page) {
    ++calls;
    page[100] = std::byte{0x5A};
    return true;
  };
  {
    SharedGuard reader = pool->pin_shared(a);
    EXPECT_FALSE(pool->repair_hint(a, write_byte));
    EXPECT_EQ(calls, 0) << "not run without the latch";
  }
  EXPECT_TRUE(pool->repair_hint(a, write_byte));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(pool->repair_hint(a, [](std::byte*) { return false; })) << "nothing written, nothing counted";
  EXPECT_EQ(pool->stats().hints.repairs, st.hints.repairs + 1);
  EXPECT_EQ(pool->pin_shared(a).data()[100], std::byte{0x5A});
  pool->flush();
  EXPECT_EQ(pool->stats().write_backs, st.write_backs) << "a repair must not dirty the page";
  pool->check_invariants();
}

// Readers and writers keep per-thread hints that go stale all the time (a pool of 8 frames
// for `pages` pages, and 1 hint in 8 scrambled to a random frame id): every validated
// optimistic read and every hinted pin must see exactly its own page, with the stamp of its
// last write. Returns the pool's counters at the end.
template <class Pool>
PoolStats stale_hints_never_return_another_page(uint64_t pages) {
  TempDir dir;
  PoolOptions o = testing::stress_options(small_options(dir.path(), 8));
  o.eviction_batch = 2;
  auto pool = Pool::open(o);
  SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, pages, [](uint64_t) { return 0; });
  std::vector<std::atomic<uint64_t>> model(pages);  // stamp; changed under the page's latch
  const size_t usable = pool->usable_page_size();
  const auto duration = std::chrono::milliseconds(1500 / kScale);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> errors{0}, validated{0}, pinned{0}, writes{0};

  auto worker = [&](int id, bool writer) {
    std::mt19937_64 rng(0x11FA + id);
    std::vector<FrameId> hints(pages, kInvalidFrame);
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        const BlockId b = static_cast<BlockId>(rng() % pages);
        const PageId pid(s, b);
        FrameId& h = hints[b];
        if (rng() % 8 == 0) h = static_cast<FrameId>(rng() % (pool->num_frames() + 3));
        if (writer) {
          ExclusiveGuard g = pool->pin_exclusive_hinted(pid, &h);
          if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != model[b].load()) {
            errors.fetch_add(1);
          }
          const uint64_t stamp = model[b].load() + 1;
          test::stamp_pattern(g.data(), usable, pid, stamp);
          model[b].store(stamp);
          g.mark_dirty();
          writes.fetch_add(1, std::memory_order_relaxed);
        } else if (rng() % 4 == 0) {
          SharedGuard g = pool->pin_shared_hinted(pid, &h);
          if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != model[b].load()) {
            errors.fetch_add(1);
          }
          pinned.fetch_add(1, std::memory_order_relaxed);
        } else {
          OptimisticRead r = pool->read_optimistic_hinted(pid, &h);
          const bool ok = test::check_pattern_racy(r.data, usable, pid);
          if (Pool::validate(r)) {
            if (!ok) errors.fetch_add(1);
            validated.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "thread " << id << ": " << e.what();
      errors.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t, /*writer=*/t == 0);
  std::this_thread::sleep_for(duration);
  stop.store(true);
  for (auto& t : threads) t.join();

  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(validated.load(), 100u);
  EXPECT_GT(pinned.load(), 10u);
  EXPECT_GT(writes.load(), 10u);
  const PoolStats st = pool->stats();
  EXPECT_GT(st.evictions, 100u);
  EXPECT_GT(st.hints.hits, 0u);
  EXPECT_GT(st.hints.misses, 0u);
  pool->check_invariants();
  for (uint64_t b = 0; b < pages; ++b) {
    PageId pid(s, static_cast<BlockId>(b));
    SharedGuard g = pool->pin_shared(pid);
    EXPECT_TRUE(test::check_pattern(g.data(), usable, pid)) << "block " << b;
    EXPECT_EQ(test::pattern_stamp(g.data()), model[b].load()) << "block " << b;
  }
  return pool->stats();
}

TEST(Lipah, StaleHintsNeverReturnAnotherPageUnderEviction) { stale_hints_never_return_another_page<LipahPool>(48); }

// The same over the array (array_hinted), on 3 pages of entries (512 per 4 KB page): with 8
// resident pages, a page of entries often has none and is punched while the frames' entry
// pointers and the threads' hints still lead into it; a punched entry reads as zero, which
// no hint check accepts.
TEST(ArrayHinted, StaleHintsNeverReturnAnotherPageUnderEvictionAndHolePunching) {
  using Pool = BasicBufferPool<translation::ArrayHintedTranslation>;
  static_assert(Pool::kFrameHints);
  const PoolStats st = stale_hints_never_return_another_page<Pool>(1536);
  EXPECT_GT(st.punches, 0u) << "pages of entries must be punched during the run";
}

// --- the B+tree on frame hints ---------------------------------------------------------

std::string key_of(int i) { return "key/" + std::to_string(i * 7919 % 1000003); }

double hit_rate(const PoolStats& before, const PoolStats& after) {
  const uint64_t hits = after.hints.hits - before.hints.hits;
  const uint64_t misses = after.hints.misses - before.hints.misses;
  return hits + misses == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(hits + misses);
}

TEST(LipahBTree, WarmDescentsUseValidHintsAndEvictionsGetRepaired) {
  TempDir dir;
  auto pool = LipahPool::open(small_options(dir.path(), 512));
  auto tree = index::BasicBTree<LipahPool>::create(*pool, "tree");
  const int n = 20000 / kScale;
  std::map<std::string, std::string> model;
  for (int i = 0; i < n; ++i) model[key_of(i)] = std::string(20, static_cast<char>('a' + i % 26));
  tree.bulk_load(model.begin(), model.end());  // nodes start without hints
  const auto shape = tree.check();
  ASSERT_GE(shape.height, kScale == 1 ? 3u : 2u);
  ASSERT_LT(shape.leaves + shape.inner_nodes + 1, 400u) << "the tree must fit in the pool";

  auto lookup_all = [&] {
    std::string v;
    for (auto& [k, want] : model) {
      ASSERT_TRUE(tree.lookup(k, &v)) << k;
      ASSERT_EQ(v, want);
    }
  };
  // Cold: bulk-loaded nodes carry no hints; the first descents repair them.
  PoolStats s0 = pool->stats();
  lookup_all();
  PoolStats s1 = pool->stats();
  EXPECT_GT(s1.hints.repairs - s0.hints.repairs, shape.leaves / 2) << "first descents repair the hints";
  // Warm: the descents go through valid hints and (almost) never look anything up.
  lookup_all();
  PoolStats s2 = pool->stats();
  EXPECT_GT(hit_rate(s1, s2), 0.99);
  const uint64_t table_lookups = (s2.accesses - s2.hints.hits) - (s1.accesses - s1.hints.hits);
  EXPECT_LT(table_lookups, (s2.accesses - s1.accesses) / 100) << "warm descents skip the table";
  // Writes latch their leaf through the hint found by the descent.
  for (int i = 0; i < n; i += 10) tree.upsert(key_of(i), "updated");
  for (int i = 0; i < n; i += 10) model[key_of(i)] = "updated";
  PoolStats s3 = pool->stats();
  EXPECT_GT(hit_rate(s2, s3), 0.95);

  // Evict the whole tree: another space's pages take every frame. Descents then fault the
  // nodes back into other frames, find their hints stale, and repair them.
  SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, other, 600, stamp_of_block);
  sweep(*pool, other, 600);
  PoolStats s4 = pool->stats();
  lookup_all();
  PoolStats s5 = pool->stats();
  EXPECT_GT(s5.hints.misses - s4.hints.misses, shape.leaves / 2);
  EXPECT_GT(s5.hints.repairs - s4.hints.repairs, shape.leaves / 2);
  // One more pass settles the pages evicted again while the tree was coming back.
  lookup_all();
  PoolStats s6 = pool->stats();
  lookup_all();
  PoolStats s7 = pool->stats();
  EXPECT_EQ(s7.faults, s6.faults) << "the tree is resident again";
  EXPECT_GT(hit_rate(s6, s7), 0.99) << "repaired hints are valid again";
  ASSERT_NO_THROW(tree.check());
  pool->check_invariants();
}

TEST(LipahBTree, StaleHintsFromDiskAreHarmlessAndTheFormatsDoNotMix) {
  TempDir dir;
  std::map<std::string, std::string> model;
  for (int i = 0; i < 3000; ++i) model[key_of(i)] = std::to_string(i);
  {
    auto pool = LipahPool::open(small_options(dir.path(), 256));
    auto tree = index::BasicBTree<LipahPool>::create(*pool, "hinted");
    for (auto& [k, v] : model) ASSERT_TRUE(tree.insert(k, v));
    for (auto& [k, v] : model) ASSERT_TRUE(tree.lookup(k, [](std::string_view) {}));
  }
  {
    // Reopened with fewer frames: hints on disk name frames that hold other pages or do not
    // exist. Every answer is still right.
    auto pool = LipahPool::open(small_options(dir.path(), 16));
    auto tree = index::BasicBTree<LipahPool>::open(*pool, "hinted");
    std::string v;
    for (auto& [k, want] : model) {
      ASSERT_TRUE(tree.lookup(k, &v)) << k;
      ASSERT_EQ(v, want);
    }
    ASSERT_NO_THROW(tree.check());
    EXPECT_GT(pool->stats().hints.misses, 0u);
  }
  {
    auto pool = BufferPool::open(small_options(dir.sub("plain"), 16));
    auto plain = index::BTree::create(*pool, "plain");
    ASSERT_TRUE(plain.insert("k", "v"));
  }
  // A plain pool refuses the hinted tree, and a hinted pool a plain tree.
  {
    auto pool = BufferPool::open(small_options(dir.path(), 16));
    expect_error(ErrorCode::kInvalidArgument, [&] { index::BTree::open(*pool, "hinted"); });
  }
  {
    auto pool = LipahPool::open(small_options(dir.sub("plain"), 16));
    expect_error(ErrorCode::kInvalidArgument, [&] { index::BasicBTree<LipahPool>::open(*pool, "plain"); });
  }
}

}  // namespace
}  // namespace calico
