// BufferPool API: spaces, pins, optimistic reads, eviction, errors, prefetch, drop.
#include "calico/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "pool/features/prediction.h"
#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::small_options;
using testing::TempDir;

auto stamp_plus(uint64_t base) {
  return [base](uint64_t b) { return base + b; };
}

TEST(BufferPool, RejectsBadOptions) {
  TempDir dir;
  auto with = [&](auto change) {
    PoolOptions o = small_options(dir.sub("d"), 16);
    change(o);
    return o;
  };
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(with([](PoolOptions& o) { o.page_size = 2048; })); });
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(with([](PoolOptions& o) { o.page_size = 4097; })); });
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(with([](PoolOptions& o) { o.pool_bytes = 4096; })); });
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(with([](PoolOptions& o) { o.data_dir = ""; })); });
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(with([](PoolOptions& o) { o.eviction_batch = 0; })); });
  expect_error(ErrorCode::kInvalidArgument,
               [&] { BufferPool::open(with([](PoolOptions& o) { o.max_blocks_per_space = (uint64_t{1} << 32) + 1; })); });
}

TEST(BufferPool, OneOpenPoolPerDirectory) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  expect_error(ErrorCode::kIoError, [&] { BufferPool::open(small_options(dir.path(), 16)); });
  pool.reset();
  EXPECT_NO_THROW(BufferPool::open(small_options(dir.path(), 16)));
}

TEST(BufferPool, WrongPageSizeOnReopen) {
  TempDir dir;
  BufferPool::open(small_options(dir.path(), 16, 4096))->create_space("t");
  Error e = expect_error(ErrorCode::kPageSizeMismatch, [&] { BufferPool::open(small_options(dir.path(), 16, 8192)); });
  EXPECT_NE(std::string(e.what()).find("4096"), std::string::npos);
}

TEST(BufferPool, SpacesCreateOpenListDrop) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId a = pool->create_space("alpha");
  SpaceId b = pool->create_space("beta.idx-1");
  EXPECT_NE(a, b);
  EXPECT_EQ(pool->open_space("alpha"), a);
  EXPECT_EQ(pool->spaces().size(), 2u);
  expect_error(ErrorCode::kSpaceExists, [&] { pool->create_space("alpha"); });
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->create_space(""); });
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->create_space("has space"); });
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->create_space(std::string(65, 'x')); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->open_space("gamma"); });

  pool->drop_space(a);
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->open_space("alpha"); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->drop_space(a); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->space_blocks(a); });
  SpaceId c = pool->create_space("alpha");  // the name is free again, the id is not reused
  EXPECT_GT(c, b);
}

TEST(BufferPool, AllocatePinAndReadBack) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 10, stamp_plus(7));
  EXPECT_EQ(pool->space_blocks(s), 10u);
  testing::expect_space(*pool, s, 10, stamp_plus(7));
  pool->check_invariants();
}

TEST(BufferPool, StatsCountAccessesHitsAndFaults) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 16));
    testing::fill_space(*pool, pool->create_space("t"), 4, stamp_plus(0));
  }
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId s = pool->open_space("t");
  for (int i = 0; i < 10; ++i) pool->pin_shared(PageId(s, 1));
  PoolStats st = pool->stats();
  EXPECT_EQ(st.accesses, 10u);
  EXPECT_EQ(st.faults, 1u);
  EXPECT_EQ(st.hits, 9u);
  // Each thread counts into its own counter; stats() adds them all up.
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        pool->optimistic_read(PageId(s, 2 + i % 2), [](const std::byte* p) { return p[0]; });
      }
    });
  }
  for (auto& t : threads) t.join();
  st = pool->stats();
  EXPECT_EQ(st.accesses, 2010u);
  EXPECT_EQ(st.faults, 3u);
  EXPECT_EQ(st.hits, 2007u);
}

TEST(BufferPool, BadPageIdsAreTypedErrors) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 3, stamp_plus(0));
  Error past_end = expect_error(ErrorCode::kPageOutOfRange, [&] { pool->pin_shared(PageId(s, 3)); });
  EXPECT_EQ(past_end.page(), PageId(s, 3));
  expect_error(ErrorCode::kPageOutOfRange, [&] { pool->pin_exclusive(PageId(s, 1u << 20)); });  // past capacity
  expect_error(ErrorCode::kPageOutOfRange, [&] { pool->optimistic_read(PageId(s, 99), [](const std::byte*) { return 0; }); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->pin_shared(PageId(s + 100, 0)); });
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->allocate(s + 100); });
  // The pool is still fine.
  testing::expect_space(*pool, s, 3, stamp_plus(0));
  pool->check_invariants();
}

TEST(BufferPool, TinyPoolEvictsAndWritesBack) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 2));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 50, stamp_plus(1000));
  testing::expect_space(*pool, s, 50, stamp_plus(1000));
  // Rewrite every page through exclusive pins, then read all again.
  for (BlockId b = 0; b < 50; ++b) {
    ExclusiveGuard g = pool->pin_exclusive(PageId(s, b));
    test::stamp_pattern(g.data(), pool->usable_page_size(), g.page_id(), 5000 + b);
    g.mark_dirty();
  }
  testing::expect_space(*pool, s, 50, stamp_plus(5000));
  PoolStats st = pool->stats();
  EXPECT_GE(st.evictions, 98u);
  EXPECT_GE(st.write_backs, 98u);
  EXPECT_EQ(st.frames, 2u);
  pool->check_invariants();
}

// Readers racing allocations: the newest block (count - 1) must always show its finished
// contents (the allocator holds it exclusively until written), and the block at `count`
// must be "out of range" or, once allocated, its contents. Never an unwritten block faulted
// in from disk behind the allocator's back (which also trips allocate's own check).
TEST(BufferPool, ReadersOfNewBlocksRaceAllocateSafely) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  SpaceId s = pool->create_space("t");
  std::atomic<bool> done{false};
  std::atomic<uint64_t> pages_seen{0}, out_of_range{0}, bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      for (uint64_t i = 0; !done.load(); ++i) {
        uint64_t count = pool->space_blocks(s);
        if (count == 0) continue;
        auto b = static_cast<BlockId>((i + t) % 2 == 0 ? count - 1 : count);
        try {
          SharedGuard g = pool->pin_shared(PageId(s, b));
          if (!test::check_pattern(g.data(), pool->usable_page_size(), PageId(s, b))) ++bad;
          ++pages_seen;
        } catch (const Error& e) {
          if (e.code() != ErrorCode::kPageOutOfRange) ++bad;
          ++out_of_range;
        }
      }
    });
  }
  testing::fill_space(*pool, s, 3000, stamp_plus(0));
  done = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(pages_seen.load(), 0u);
  testing::expect_space(*pool, s, 3000, stamp_plus(0));
  pool->check_invariants();
}

TEST(BufferPool, FullPoolIsAnErrorAndRecovers) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 2));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 4, stamp_plus(0));
  SharedGuard g0 = pool->pin_shared(PageId(s, 0));
  SharedGuard g1 = pool->pin_shared(PageId(s, 1));
  expect_error(ErrorCode::kPoolFull, [&] { pool->pin_shared(PageId(s, 2)); });
  expect_error(ErrorCode::kPoolFull, [&] { pool->allocate(s); });
  g1.release();
  SharedGuard g2 = pool->pin_shared(PageId(s, 2));
  EXPECT_TRUE(test::check_pattern(g2.data(), pool->usable_page_size(), PageId(s, 2)));
  g0.release();
  g2.release();
  // The failed allocate claimed nothing (rule 6: no block is counted that was never written).
  EXPECT_EQ(pool->space_blocks(s), 4u);
  pool->check_invariants();
}

TEST(BufferPool, ExclusiveUnlockInvalidatesOptimisticReaders) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 8));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 1, stamp_plus(0));
  PageId pid(s, 0);
  OptimisticRead r = pool->read_optimistic(pid);
  EXPECT_TRUE(BufferPool::validate(r));
  { SharedGuard g = pool->pin_shared(pid); }
  EXPECT_TRUE(BufferPool::validate(r)) << "shared pins do not invalidate";
  ExclusiveGuard w = pool->pin_exclusive(pid);
  EXPECT_FALSE(BufferPool::validate(r)) << "a held exclusive latch invalidates";
  w.release();
  EXPECT_FALSE(BufferPool::validate(r)) << "the version moved on";
  OptimisticRead r2 = pool->read_optimistic(pid);
  EXPECT_TRUE(BufferPool::validate(r2));
  EXPECT_EQ(r2.seen.version(), (r.seen.version() + 1) & translation::kVersionMask);
}

// Version ABA: a page evicted and reloaded into the same frame must not validate a reader
// that started before the eviction.
TEST(BufferPool, EvictAndReloadIntoSameFrameChangesVersion) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 2));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 8, stamp_plus(0));
  PageId pid(s, 0);
  OptimisticRead before = pool->read_optimistic(pid);
  bool same_frame_seen = false;
  for (int round = 0; round < 50 && !same_frame_seen; ++round) {
    for (BlockId b = 1; b < 8; ++b) pool->pin_shared(PageId(s, b));  // evicts page 0
    OptimisticRead after = pool->read_optimistic(pid);
    EXPECT_FALSE(BufferPool::validate(before));
    if (after.seen.frame() == before.seen.frame()) {
      same_frame_seen = true;
      EXPECT_NE(after.seen.version(), before.seen.version());
    }
  }
  EXPECT_TRUE(same_frame_seen) << "with two frames the page must come back to its old frame";
}

TEST(BufferPool, ConcurrentFaultsOnOnePageReadItOnce) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 10, stamp_plus(0));
  for (int trial = 0; trial < 10; ++trial) {
    pool.reset();  // a reopened pool has nothing resident
    pool = BufferPool::open(small_options(dir.path(), 16));
    PageId pid(s, static_cast<BlockId>(trial));
    std::atomic<int> ready{0};
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < 6) {
        }
        SharedGuard g = pool->pin_shared(pid);
        good += test::check_pattern(g.data(), pool->usable_page_size(), pid);
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(good.load(), 6);
    EXPECT_EQ(pool->stats().faults, 1u) << "trial " << trial;
    pool->check_invariants();
  }
}

TEST(BufferPool, OptimisticReadFallsBackToPin) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 8));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 1, stamp_plus(3));
  PageId pid(s, 0);
  int calls = 0;
  // A function that always invalidates its own read (by taking the exclusive latch from
  // another thread) forces every optimistic attempt to fail.
  uint64_t stamp = pool->optimistic_read(pid, [&](const std::byte* p) {
    ++calls;
    if (calls <= BufferPool::kOptimisticAttempts) {
      std::thread([&] { pool->pin_exclusive(pid); }).join();
    }
    return test::pattern_stamp(p);
  });
  EXPECT_EQ(stamp, 3u);
  EXPECT_EQ(calls, BufferPool::kOptimisticAttempts + 1);
  EXPECT_EQ(pool->stats().optimistic_fallbacks, 1u);
}

TEST(BufferPool, PrefetchGroupLoadsWithoutSynchronousFaults) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 64));
    testing::fill_space(*pool, pool->create_space("t"), 100, stamp_plus(0));
  }
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  SpaceId s = pool->open_space("t");
  std::vector<PageId> group;
  std::vector<uint32_t> offsets;
  for (BlockId b = 0; b < 100; b += 3) group.push_back(PageId(s, b)), offsets.push_back(64);
  group.push_back(PageId(s, 5000));     // past the end: skipped
  group.push_back(PageId(s + 9, 0));    // unknown space: skipped
  offsets.push_back(0), offsets.push_back(0);
  pool->prefetch_group(group, offsets);
  pool->check_invariants();  // with the reads (most likely) still in flight
  PoolStats st = pool->stats();
  EXPECT_EQ(st.prefetch_issued, 34u);
  EXPECT_EQ(st.faults, 0u);
  for (size_t i = 0; i + 2 < group.size(); ++i) {
    SharedGuard g = pool->pin_shared(group[i]);
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), group[i]));
  }
  EXPECT_EQ(pool->stats().faults, 0u) << "every page came from the prefetch";
  // Prefetching resident pages issues nothing.
  pool->prefetch_group(std::span(group.data(), 5));
  EXPECT_EQ(pool->stats().prefetch_issued, 34u);
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->prefetch_group(group, std::span(offsets.data(), 2)); });
  pool->check_invariants();
}

// prewarm: the asked blocks, in block order, into adjacent frames of a fresh pool; never
// past the free frames (nothing evicted); the range clamped to the space.
TEST(BufferPool, PrewarmLoadsBlocksInOrderIntoFreeFramesOnly) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 64));
    testing::fill_space(*pool, pool->create_space("t"), 100, stamp_plus(0));
  }
  auto reads = [](const PoolStats& st) { return st.faults + st.prefetch_issued; };
  {
    auto pool = BufferPool::open(small_options(dir.path(), 64));
    const SpaceId s = pool->open_space("t");
    EXPECT_EQ(pool->prewarm(s, 10, 20), 20u);
    EXPECT_EQ(reads(pool->stats()), 20u);
    const std::byte* first = pool->pin_shared(PageId(s, 10)).data();
    for (BlockId b = 10; b < 30; ++b) {
      SharedGuard g = pool->pin_shared(PageId(s, b));
      EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), PageId(s, b)));
      EXPECT_EQ(g.data() - first, std::ptrdiff_t(b - 10) * std::ptrdiff_t(pool->page_size())) << "block " << b;
    }
    EXPECT_EQ(pool->prewarm(s, 10, 20), 20u) << "resident pages count, and are not read again";
    EXPECT_EQ(reads(pool->stats()), 20u);
    EXPECT_EQ(pool->prewarm(s, 95, 1000), 5u) << "clamped to the space's 100 blocks";
    EXPECT_EQ(pool->prewarm(s, 500), 0u);
    expect_error(ErrorCode::kUnknownSpace, [&] { pool->prewarm(s + 9); });
  }
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  const SpaceId s = pool->open_space("t");
  const uint64_t frames = pool->num_frames();
  const uint64_t loaded = pool->prewarm(s);
  EXPECT_LE(loaded, frames);
  EXPECT_GE(loaded + 8, frames) << "fills the pool up to its free frames";
  EXPECT_EQ(pool->stats().evictions, 0u) << "a full pool stops the prewarm; nothing is evicted";
  pool->check_invariants();
}

// prewarm on every translation (tiered pools: the fast tier's free frames; nothing is
// evicted or demoted): the count, the data, and a second prewarm reading nothing.
template <class Pool>
class PrewarmOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(PrewarmOnEveryTranslation, testing::EvictingPools, testing::PoolName);

TYPED_TEST(PrewarmOnEveryTranslation, FillsFreeFramesWithoutPushingPagesOut) {
  using Pool = TypeParam;
  TempDir dir;
  {
    auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
    testing::fill_space(*pool, pool->create_space("t"), 200, stamp_plus(0));
    pool->flush();
  }
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  const SpaceId s = pool->open_space("t");
  const uint64_t loaded = pool->prewarm(s);
  EXPECT_GE(loaded, 32u);
  EXPECT_LE(loaded, 64u);
  EXPECT_EQ(testing::pages_pushed_out(pool->stats()), 0u);
  const uint64_t reads = pool->stats().faults + pool->stats().prefetch_issued;
  EXPECT_EQ(pool->prewarm(s, 0, loaded), loaded) << "the first pages are the ones loaded";
  EXPECT_EQ(pool->stats().faults + pool->stats().prefetch_issued, reads) << "nothing read again";
  for (BlockId b = 0; b < loaded; ++b) {
    SharedGuard g = pool->pin_shared(PageId(s, b));
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), PageId(s, b))) << "block " << b;
  }
  pool->check_invariants();
}

// read_group on every translation: a read is started for each resident page, and only for
// those (the evicted ones are prefetched, as by prefetch_group); a started read is the one
// read_optimistic gives, counted as one access, and a later write invalidates it. Policies
// that promote on access (predictive) start none.
template <class Pool>
class ReadGroupOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(ReadGroupOnEveryTranslation, testing::EvictingPools, testing::PoolName);

TYPED_TEST(ReadGroupOnEveryTranslation, StartsTheReadsOfResidentPagesAndPrefetchesTheRest) {
  using Pool = TypeParam;
  constexpr bool kStartsReads = !translation::Predicting<typename Pool::TranslationPolicy>;
  TempDir dir;
  {
    auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
    testing::fill_space(*pool, pool->create_space("t"), 200, stamp_plus(7));
    pool->flush();
  }
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  const SpaceId s = pool->open_space("t");
  const size_t usable = pool->usable_page_size();
  std::vector<PageId> group;
  for (BlockId b = 0; b < 40; ++b) group.push_back(PageId(s, b));
  for (BlockId b = 0; b < 40; b += 2) pool->pin_shared(group[b]);  // the even blocks are resident
  group.push_back(PageId(s, 5000));   // past the end
  group.push_back(PageId(s + 9, 0));  // unknown space
  std::vector<OptimisticRead> reads(group.size());
  for (auto& r : reads) r.data = reinterpret_cast<const std::byte*>(1);  // read_group must clear the others
  const PoolStats before = pool->stats();
  pool->read_group(group, {}, reads);
  uint64_t started = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const OptimisticRead& r = reads[i];
    if (r.data == nullptr) {
      EXPECT_FALSE(kStartsReads && i < 40 && i % 2 == 0) << "resident block " << i << " was not started";
      continue;
    }
    ++started;
    ASSERT_TRUE(i < 40 && i % 2 == 0) << "a read started for block " << group[i].block() << ", not resident";
    EXPECT_EQ(r.pid, group[i]);
    EXPECT_TRUE(test::check_pattern(r.data, usable, group[i]));
    EXPECT_EQ(test::pattern_stamp(r.data), 7 + i);
    EXPECT_TRUE(Pool::validate(r));
    EXPECT_EQ(pool->read_optimistic(group[i]).data, r.data) << "the frame read_optimistic gives";
  }
  EXPECT_EQ(started, kStartsReads ? 20u : 0u);
  EXPECT_EQ(pool->stats().accesses - before.accesses, started + (kStartsReads ? started : 0))
      << "a started read is one access (and each read_optimistic above one more)";
  // The odd blocks were prefetched: reading them faults nothing.
  EXPECT_EQ(pool->stats().prefetch_issued - before.prefetch_issued, 20u);
  for (BlockId b = 1; b < 40; b += 2) {
    SharedGuard g = pool->pin_shared(group[b]);
    EXPECT_TRUE(test::check_pattern(g.data(), usable, group[b]));
  }
  EXPECT_EQ(pool->stats().faults, before.faults) << "every odd page came from the group's prefetch";
  // A write after the group invalidates its started read.
  if constexpr (kStartsReads) {
    { ExclusiveGuard g = pool->pin_exclusive(group[0]); }
    EXPECT_FALSE(Pool::validate(reads[0]));
    EXPECT_TRUE(Pool::validate(reads[2]));
  }
  std::vector<OptimisticRead> short_reads(3);
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->read_group(group, {}, short_reads); });
  std::vector<uint32_t> short_offsets(2);
  expect_error(ErrorCode::kInvalidArgument, [&] { pool->read_group(group, short_offsets, reads); });
  pool->check_invariants();
}

TEST(BufferPool, DropSpaceFreesFramesFileAndTranslation) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 32));
  SpaceId keep = pool->create_space("keep");
  SpaceId gone = pool->create_space("gone");
  testing::fill_space(*pool, keep, 10, stamp_plus(0));
  testing::fill_space(*pool, gone, 20, stamp_plus(0));
  EXPECT_TRUE(std::filesystem::exists(dir.sub("space_" + std::to_string(gone) + ".dat")));
  uint64_t free_before = pool->stats().free_frames;
  pool->drop_space(gone);
  PoolStats st = pool->stats();
  EXPECT_EQ(st.free_frames, free_before + 20);
  EXPECT_FALSE(std::filesystem::exists(dir.sub("space_" + std::to_string(gone) + ".dat")));
  expect_error(ErrorCode::kUnknownSpace, [&] { pool->pin_shared(PageId(gone, 0)); });
  testing::expect_space(*pool, keep, 10, stamp_plus(0));
  pool->check_invariants();
  pool.reset();
  pool = BufferPool::open(small_options(dir.path(), 32));
  EXPECT_EQ(pool->spaces().size(), 1u);
  testing::expect_space(*pool, keep, 10, stamp_plus(0));
}

TEST(BufferPool, DropWaitsForPinsOfOtherThreads) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 4, stamp_plus(0));
  SharedGuard g = pool->pin_shared(PageId(s, 2));
  std::atomic<bool> dropped{false};
  std::thread dropper([&] {
    pool->drop_space(s);
    dropped = true;
  });
  // The page stays readable while pinned, whatever the dropper does.
  for (int i = 0; i < 1000 && !dropped; ++i) {
    ASSERT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), PageId(s, 2)));
    std::this_thread::yield();
  }
  EXPECT_FALSE(dropped.load()) << "drop_space returned while a page of the space was pinned";
  g.release();
  dropper.join();
  EXPECT_TRUE(dropped.load());
  pool->check_invariants();
}

class PageSizes : public ::testing::TestWithParam<size_t> {};

TEST_P(PageSizes, EvictionRoundTrip) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 4, GetParam()));
  EXPECT_EQ(pool->usable_page_size(), GetParam() - 16);
  SpaceId s = pool->create_space("t");
  testing::fill_space(*pool, s, 30, stamp_plus(9));
  testing::expect_space(*pool, s, 30, stamp_plus(9));
  pool.reset();
  pool = BufferPool::open(small_options(dir.path(), 4, GetParam()));
  testing::expect_space(*pool, pool->open_space("t"), 30, stamp_plus(9));
}

INSTANTIATE_TEST_SUITE_P(BufferPool, PageSizes, ::testing::Values(4096, 8192, 16384));

}  // namespace
}  // namespace calico
