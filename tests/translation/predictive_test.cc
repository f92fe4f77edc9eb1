// Tests for predictive translation (translation/predictive.h, pool/features/promotion.h): the fast
// modulo, the chained table (sizing, stable entries, concurrent inserts, reset), preferred
// frames for loads into an empty pool, promotion, demotion, validation failures of readers
// of moved pages, and many threads reading and writing while pages move and get evicted.
#include "translation/predictive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <latch>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/error.h"
#include "support/test_util.h"

namespace calico {
namespace {

using translation::EntryWord;
using translation::FastMod;
using translation::PredictiveTable;
using Pool = BasicBufferPool<translation::PredictiveTranslation>;
using testing::TempDir;

constexpr uint64_t kSeed = 0x9E3D1C7;  // fixed so a failure replays

PoolOptions options_for_frames(uint64_t frames) {
  PoolOptions o;
  o.page_size = 4096;
  o.pool_bytes = frames * o.page_size;
  return o;
}

// --- fast modulo and the table ---------------------------------------------------------

TEST(PredictiveFastMod, MatchesTheModuloOperator) {
  std::mt19937_64 rng(kSeed);
  const uint32_t divisors[] = {1, 2, 3, 7, 100, 180, 255, 4096, 1000003, 0x7FFFFFFFu, 0xFFFFFFFFu};
  for (uint32_t d : divisors) {
    FastMod mod(d);
    for (uint32_t a : {0u, 1u, d - 1, d, 0xFFFFFFFFu}) EXPECT_EQ(mod(a), a % d) << a << " mod " << d;
    for (int i = 0; i < 20000; ++i) {
      uint32_t a = static_cast<uint32_t>(rng());
      ASSERT_EQ(mod(a), a % d) << a << " mod " << d;
    }
  }
}

TEST(PredictiveTable, SizedAtTwiceTheFramesBoundedByCapacity) {
  EXPECT_EQ(PredictiveTable(1 << 20, options_for_frames(180)).bucket_count(), 512u);
  EXPECT_EQ(PredictiveTable(1 << 20, options_for_frames(256)).bucket_count(), 512u);
  EXPECT_EQ(PredictiveTable(100, options_for_frames(4096)).bucket_count(), 128u);
  EXPECT_EQ(PredictiveTable(1 << 20, options_for_frames(1)).bucket_count(), PredictiveTable::kMinBuckets);
  for (uint64_t bad : {uint64_t{0}, (uint64_t{1} << 32) + 1}) {
    testing::expect_error(ErrorCode::kInvalidArgument, [&] { PredictiveTable t(bad, options_for_frames(8)); });
  }
}

TEST(PredictiveTable, EntriesAreCreatedZeroOnFirstUseAndNeverMove) {
  PredictiveTable t(1 << 20, options_for_frames(8));  // 16 buckets: long chains
  const BlockId n = 1000;
  std::vector<translation::Entry*> first(n);
  for (BlockId b = 0; b < n; ++b) {
    first[b] = &t.entry(b);
    EXPECT_EQ(first[b]->load(), 0u);
    first[b]->store(EntryWord::make(b + 1, 3, translation::kUnlocked).raw);
  }
  for (BlockId b = 0; b < n; ++b) {
    ASSERT_EQ(&t.entry(b), first[b]) << "block " << b;
    ASSERT_EQ(translation::load(t.entry(b)).frame(), b + 1);
  }
  PredictiveTable::Shape s = t.shape();
  EXPECT_EQ(s.slots, n);
  EXPECT_EQ(s.overflow_nodes, n - t.bucket_count());  // every bucket's first slot is inlined
  EXPECT_GE(s.longest_chain, n / t.bucket_count());
  EXPECT_LE(s.longest_chain, 4 * n / t.bucket_count());
}

TEST(PredictiveTable, ConcurrentInsertsCreateOneEntryPerBlock) {
  PredictiveTable t(1 << 20, options_for_frames(64));  // 128 buckets for 6000 blocks
  const BlockId n = 6000;
  const int threads = 4;
  std::vector<std::vector<translation::Entry*>> seen(threads, std::vector<translation::Entry*>(n));
  std::latch start(threads);
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&, i] {
      std::vector<BlockId> order(n);
      for (BlockId b = 0; b < n; ++b) order[b] = b;
      std::shuffle(order.begin(), order.end(), std::mt19937_64(kSeed + i));
      start.arrive_and_wait();
      for (BlockId b : order) {
        translation::Entry& e = t.entry(b);
        e.fetch_add(1);  // every thread bumps the one entry of b
        seen[i][b] = &e;
      }
    });
  }
  for (auto& th : ts) th.join();
  for (BlockId b = 0; b < n; ++b) {
    for (int i = 1; i < threads; ++i) ASSERT_EQ(seen[i][b], seen[0][b]) << "block " << b;
    ASSERT_EQ(seen[0][b]->load(), uint64_t(threads)) << "block " << b;
  }
  EXPECT_EQ(t.shape().slots, n);
}

TEST(PredictiveTable, ResetReturnsMemoryAndReadsZero) {
  PredictiveTable t(1 << 20, options_for_frames(1024));
  for (BlockId b = 0; b < 20000; ++b) (void)t.entry(b);
  EXPECT_GT(t.private_bytes(0), 20000 * 24u);
  EXPECT_GE(t.reserved_bytes(), t.bucket_count() * 32);
  t.reset();
  EXPECT_EQ(t.private_bytes(0), 0u);
  EXPECT_EQ(t.shape().slots, 0u);
  EXPECT_EQ(t.entry(7).load(), 0u);  // a retired table answers with a zero entry
}

// --- the pool ---------------------------------------------------------------------------

uint64_t stamp_of(uint64_t b) { return b * 7 + 1; }

// frame -> page, for every resident page of the given spaces (quiescent pool).
std::map<FrameId, PageId> frame_owners(Pool& pool, const std::vector<std::pair<SpaceId, uint64_t>>& spaces) {
  std::map<FrameId, PageId> owners;
  for (auto [space, pages] : spaces) {
    for (BlockId b = 0; b < pages; ++b) {
      PageId pid(space, b);
      FrameId f = pool.internals().frame_of(pid);
      if (f != kInvalidFrame) {
        EXPECT_TRUE(owners.emplace(f, pid).second) << "two pages in frame " << f;
      }
    }
  }
  return owners;
}

// Every resident page sits in its preferred frame, or that frame holds another page.
// Returns how many sit in their preferred frame.
uint64_t expect_preferred_or_taken(Pool& pool, SpaceId space, uint64_t pages,
                                   const std::map<FrameId, PageId>& owners) {
  uint64_t in_place = 0;
  for (BlockId b = 0; b < pages; ++b) {
    PageId pid(space, b);
    FrameId want = pool.internals().preferred_frame(pid);
    if (pool.internals().frame_of(pid) == want) {
      ++in_place;
    } else {
      auto it = owners.find(want);
      EXPECT_TRUE(it != owners.end() && it->second != pid) << "block " << b << ": preferred frame " << want << " is free";
    }
  }
  return in_place;
}

TEST(PredictivePool, PagesLoadedIntoAnEmptyPoolLandInTheirPreferredFrames) {
  TempDir dir;
  const uint32_t frames = 256;
  const uint64_t pages = 64;
  SpaceId space;
  {
    auto pool = Pool::open(testing::small_options(dir.path(), frames));
    space = pool->create_space("s");
    testing::fill_space(*pool, space, pages, stamp_of);
    uint64_t in_place = expect_preferred_or_taken(*pool, space, pages, frame_owners(*pool, {{space, pages}}));
    EXPECT_GE(in_place, pages * 3 / 4) << "allocations";
    pool->check_invariants();
  }
  // Reopened: faults load the pages (frame_of does not fault). A hit after a fault may move
  // a page, freeing a frame that another page preferred, so only the count is checked.
  auto pool = Pool::open(testing::small_options(dir.path(), frames));
  uint64_t in_place = 0;
  for (BlockId b = 0; b < pages; ++b) {
    PageId pid(space, b);
    pool->optimistic_read(pid, [](const std::byte*) { return 0; });
    in_place += pool->internals().frame_of(pid) == pool->internals().preferred_frame(pid);
  }
  EXPECT_GE(in_place, pages * 3 / 4) << "faults";
  testing::expect_space(*pool, space, pages, stamp_of);
  pool->check_invariants();
}

TEST(PredictivePool, HitsPromotePagesIntoFreedPreferredFramesAndKeepTheirContents) {
  TempDir dir;
  const uint32_t frames = 256;
  const uint64_t filler_pages = 220, pages = 30;
  PoolOptions o = testing::small_options(dir.path(), frames);
  SpaceId space;
  {
    auto pool = Pool::open(o);
    // The filler takes most frames, so the space's pages mostly land elsewhere.
    SpaceId filler = pool->create_space("filler");
    testing::fill_space(*pool, filler, filler_pages, stamp_of);
    space = pool->create_space("hot");
    testing::fill_space(*pool, space, pages, stamp_of);  // dirty: moves must carry the bit
    uint64_t in_place_before = 0;
    for (BlockId b = 0; b < pages; ++b) in_place_before += pool->internals().frame_of(PageId(space, b)) == pool->internals().preferred_frame(PageId(space, b));
    EXPECT_LT(in_place_before, pages / 2);
    pool->drop_space(filler);  // frees the filler's frames (many are preferred frames of "hot")
    ASSERT_EQ(pool->internals().promotions(), 0u);

    for (int round = 0; round < 600; ++round) {
      for (BlockId b = 0; b < pages; ++b) {
        SharedGuard g = pool->pin_shared(PageId(space, b));
        ASSERT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), g.page_id()));
      }
    }
    // Demotions go on among colliding pages and free frames late, so only the count is
    // checked: about 28 of 30 pages can have a preferred frame of their own.
    uint64_t in_place = 0;
    for (BlockId b = 0; b < pages; ++b) in_place += pool->internals().frame_of(PageId(space, b)) == pool->internals().preferred_frame(PageId(space, b));
    EXPECT_GT(pool->internals().promotions(), 0u);
    EXPECT_GE(in_place, pages * 3 / 4);
    testing::expect_space(*pool, space, pages, stamp_of);
    pool->check_invariants();
  }
  // The dirty bit moved with the pages: the close's flush wrote them.
  auto pool = Pool::open(o);
  testing::expect_space(*pool, space, pages, stamp_of);
}

// Two resident pages with the same preferred frame, `resident` holding it.
struct Collision {
  PageId resident;
  PageId hot;
};
Collision find_collision(Pool& pool, SpaceId space, uint64_t pages) {
  for (BlockId i = 0; i < pages; ++i) {
    PageId a(space, i);
    if (pool.internals().frame_of(a) != pool.internals().preferred_frame(a)) continue;
    for (BlockId j = 0; j < pages; ++j) {
      PageId b(space, j);
      if (j != i && pool.internals().preferred_frame(b) == pool.internals().preferred_frame(a)) return {a, b};
    }
  }
  return {};
}

TEST(PredictivePool, AHotPageDemotesTheHolderOfItsPreferredFrame) {
  TempDir dir;
  const uint32_t frames = 256;
  const uint64_t pages = 64;  // about 8 colliding pairs among 64 pages in 256 frames
  auto pool = Pool::open(testing::small_options(dir.path(), frames));
  SpaceId space = pool->create_space("s");
  testing::fill_space(*pool, space, pages, stamp_of);
  const auto [resident, hot] = find_collision(*pool, space, pages);
  ASSERT_TRUE(resident.valid()) << "no two pages share a preferred frame";
  const FrameId target = pool->internals().preferred_frame(hot);
  ASSERT_EQ(pool->internals().frame_of(resident), target);
  ASSERT_NE(pool->internals().frame_of(hot), target);

  // An optimistic reader of each page, started before the moves.
  OptimisticRead r_resident = pool->read_optimistic(resident);
  ASSERT_EQ(pool->internals().frame_of(resident), target);
  const uint64_t demotions_before = pool->internals().demotions();
  for (int i = 0; i < 100000 && pool->internals().frame_of(hot) != target; ++i) {
    SharedGuard g = pool->pin_shared(hot);
    ASSERT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), hot));
  }
  ASSERT_EQ(pool->internals().frame_of(hot), target) << "no demotion in 100000 hits (expected one per ~512)";
  EXPECT_GT(pool->internals().demotions(), demotions_before);
  EXPECT_NE(pool->internals().frame_of(resident), target);
  EXPECT_FALSE(Pool::validate(r_resident)) << "a reader of a demoted page must fail validation";
  for (PageId pid : {resident, hot}) {
    SharedGuard g = pool->pin_shared(pid);
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), pid));
    EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(pid.block()));
  }
  pool->check_invariants();
  testing::expect_space(*pool, space, pages, stamp_of);
}

TEST(PredictivePool, ReadersOfAPromotedPageFailValidation) {
  TempDir dir;
  const uint32_t frames = 256;
  auto pool = Pool::open(testing::small_options(dir.path(), frames));
  SpaceId filler = pool->create_space("filler");
  testing::fill_space(*pool, filler, 240, stamp_of);
  SpaceId space = pool->create_space("s");
  testing::fill_space(*pool, space, 16, stamp_of);
  pool->drop_space(filler);
  // A page outside its preferred frame, with that frame now free, and a reader started on
  // it (the read itself may promote it, 1 in 32: then try the next candidate).
  std::map<FrameId, PageId> owners = frame_owners(*pool, {{space, 16}});
  PageId pid;
  OptimisticRead r;
  FrameId from = kInvalidFrame;
  for (BlockId b = 0; b < 16 && from == kInvalidFrame; ++b) {
    PageId candidate(space, b);
    FrameId want = pool->internals().preferred_frame(candidate);
    if (pool->internals().frame_of(candidate) == want || owners.contains(want)) continue;
    r = pool->read_optimistic(candidate);
    if (pool->internals().frame_of(candidate) != want) pid = candidate, from = pool->internals().frame_of(candidate);
  }
  ASSERT_NE(from, kInvalidFrame) << "no page outside a free preferred frame";
  ASSERT_TRUE(Pool::validate(r));  // nothing moved yet
  for (int i = 0; i < 10000 && pool->internals().frame_of(pid) == from; ++i) (void)pool->pin_shared(pid);
  ASSERT_EQ(pool->internals().frame_of(pid), pool->internals().preferred_frame(pid));
  EXPECT_FALSE(Pool::validate(r));
  OptimisticRead fresh = pool->read_optimistic(pid);
  EXPECT_TRUE(test::check_pattern(fresh.data, pool->usable_page_size(), pid));
  EXPECT_TRUE(Pool::validate(fresh));
  pool->check_invariants();
}

// Threads read (pinned and optimistic) and write pages of a space three times the pool while
// pages are promoted, demoted, evicted and flushed; every read checks the page's pattern and
// (under a pin) its stamp against the model.
TEST(PredictivePool, ConcurrentAccessDuringPromotionsKeepsEveryPage) {
  TempDir dir;
  const uint32_t frames = 96;
  const uint64_t pages = 300;
  const int threads = 4;
  PoolOptions o = testing::small_options(dir.path(), frames);
  auto pool = Pool::open(o);
  SpaceId space = pool->create_space("s");
  testing::fill_space(*pool, space, pages, [](uint64_t) { return 0; });
  std::vector<std::atomic<uint64_t>> model(pages);  // changed under the page's exclusive latch
  const size_t usable = pool->usable_page_size();

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> failures{0}, ops{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(kSeed + t);
      // Skewed: a hot tenth of the pages takes most accesses, so moves and evictions mix.
      auto pick = [&] { return static_cast<BlockId>(rng() % 4 != 0 ? rng() % (pages / 10) : rng() % pages); };
      while (!stop.load(std::memory_order_relaxed)) {
        PageId pid(space, pick());
        uint64_t op = rng() % 10;
        if (op < 2) {
          ExclusiveGuard g = pool->pin_exclusive(pid);
          uint64_t stamp = test::pattern_stamp(g.data());
          if (!test::check_pattern(g.data(), usable, pid) || stamp != model[pid.block()].load()) ++failures;
          test::stamp_pattern(g.data(), usable, pid, stamp + 1);
          model[pid.block()].store(stamp + 1);
          g.mark_dirty();
        } else if (op < 6) {
          SharedGuard g = pool->pin_shared(pid);
          if (!test::check_pattern(g.data(), usable, pid) ||
              test::pattern_stamp(g.data()) != model[pid.block()].load()) {
            ++failures;
          }
        } else {
          bool ok = pool->optimistic_read(pid, [&](const std::byte* page) {
            return test::check_pattern_racy(page, usable, pid);
          });
          if (!ok) ++failures;
        }
        ++ops;
      }
    });
  }
  std::thread flusher([&] {
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      pool->flush();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& th : ts) th.join();
  flusher.join();

  EXPECT_EQ(failures.load(), 0u);
  EXPECT_GT(ops.load(), 1000u);
  EXPECT_GT(pool->internals().promotions(), 0u);
  EXPECT_GT(pool->internals().demotions(), 0u);  // about 1 in 512 mispredicted hits: dozens per run
  std::printf("%llu operations, %llu promotions, %llu demotions, %llu evictions\n",
              (unsigned long long)ops.load(), (unsigned long long)pool->internals().promotions(),
              (unsigned long long)pool->internals().demotions(), (unsigned long long)pool->stats().evictions);
  pool->check_invariants();
  testing::expect_space(*pool, space, pages, [&](uint64_t b) { return model[b].load(); });
  pool.reset();
  auto reopened = Pool::open(o);
  testing::expect_space(*reopened, space, pages, [&](uint64_t b) { return model[b].load(); });
}

}  // namespace
}  // namespace calico
