// Calico tiers (docs/results/tiers.md; pool/features/tiering.h, pool/features/tier_moves.h): a far frame tier in the buffer
// pool. Tiny tiers, so that pages keep moving fast -> far -> disk -> fast:
//  - a single-threaded model test against a reference map (every read checked, stats show
//    promotions, demotions and far evictions, and no fast page goes straight to disk), then a
//    reopen that finds every write (the dirty bit survives moves);
//  - deterministic move tests: an optimistic read started before a page moves away and back
//    into the same frame must not validate (the version seed of the frame it left);
//  - a multi-threaded stress of optimistic readers, shared pinners, writers, a mover and a
//    flusher while pages move, against per-page committed stamps;
//  - bad configurations: typed errors naming the parameter.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "support/page_pattern.h"
#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using testing::TempDir;
using memory::tiers::TierConfig;

// The translations that take a far tier (BasicBufferPool::kTierable).
using TierablePools = ::testing::Types<BasicBufferPool<translation::TieredArrayTranslation>,
                                       BasicBufferPool<translation::VmcacheNTranslation>>;

PoolOptions tier_options(const std::string& dir, uint32_t fast, uint32_t far, double promote) {
  PoolOptions o = testing::small_options(dir, fast);
  o.eviction_batch = 2;
  o.tiers.far = TierConfig::remote_numa(far);
  o.tiers.far.extra_latency_ns = 5;         // the charge runs, cheaply
  o.tiers.far.migration_bytes_per_s = 0;    // unthrottled: tests must not wait for tokens
  o.tiers.promote_on_read = promote;
  o.tiers.promote_on_write = promote;
  // vmcache_n (batched migration): small batches for tiny tiers; a drawn promotion moves its
  // page at once unless a test queues more (the other policies ignore both).
  o.tiers.demotion_batch = 3;
  o.tiers.promotion_batch = 1;
  return o;
}

template <class Pool>
class TierPool : public ::testing::Test {};
TYPED_TEST_SUITE(TierPool, TierablePools, testing::PoolName);

// Single thread, N pages over fast 8 + far 16 frames: random optimistic reads, shared reads
// and writes, each checked against the reference map.
TYPED_TEST(TierPool, RandomAccessMatchesReferenceAcrossTiersAndDisk) {
  using Pool = TypeParam;
  TempDir dir;
  const uint64_t pages = 96;
  PoolOptions o = tier_options(dir.path(), 8, 16, 0.5);
  o.tiers.promotion_batch = 3;
  std::map<BlockId, uint64_t> ref;
  SpaceId space;
  {
    auto pool = Pool::open(o);
    ASSERT_EQ(pool->internals().fast_frames(), 8u);
    ASSERT_EQ(pool->num_frames(), 24u);
    const size_t usable = pool->usable_page_size();
    space = pool->create_space("t");
    testing::fill_space(*pool, space, pages, [](BlockId b) { return uint64_t{b} * 1000; });
    for (uint64_t b = 0; b < pages; ++b) ref[static_cast<BlockId>(b)] = b * 1000;
    std::mt19937_64 rng(17);
    for (int op = 0; op < 6000; ++op) {
      const BlockId b = static_cast<BlockId>(rng() % pages);
      const PageId pid(space, b);
      const int kind = static_cast<int>(rng() % 4);
      if (kind <= 1) {
        auto [ok, stamp] = pool->optimistic_read(pid, [&](const std::byte* p) {
          uint64_t s = 0;
          bool good = test::check_pattern_racy(p, usable, pid, &s);
          return std::pair<bool, uint64_t>(good, s);
        });
        ASSERT_TRUE(ok) << "optimistic read of block " << b << " at op " << op;
        ASSERT_EQ(stamp, ref[b]) << "block " << b << " at op " << op;
      } else if (kind == 2) {
        SharedGuard g = pool->pin_shared(pid);
        ASSERT_TRUE(test::check_pattern(g.data(), usable, pid)) << "block " << b << " at op " << op;
        ASSERT_EQ(test::pattern_stamp(g.data()), ref[b]) << "block " << b << " at op " << op;
      } else {
        ExclusiveGuard g = pool->pin_exclusive(pid);
        ASSERT_EQ(test::pattern_stamp(g.data()), ref[b]);
        test::stamp_pattern(g.data(), usable, pid, ++ref[b]);
        g.mark_dirty();
      }
      if (op % 1000 == 999) pool->check_invariants();
    }
    pool->check_invariants();
    PoolStats st = pool->stats();
    EXPECT_GT(st.migration.promotions, 0u);
    EXPECT_GT(st.migration.demotions, 0u);
    EXPECT_GT(st.tier[1].evictions, 0u) << "no page left the far tier for disk";
    EXPECT_EQ(st.tier[0].evictions, 0u) << "a fast page went to disk without passing the far tier";
    EXPECT_LE(st.write_backs, st.tier[1].evictions) << "a write-back that was not a far eviction";
    EXPECT_GT(st.tier[1].hits, 0u);
    EXPECT_GT(st.tier[0].hits, 0u);
    EXPECT_EQ(st.migration.bytes, (st.migration.promotions + st.migration.demotions) * o.page_size);
    EXPECT_GT(st.migration.ns, 0u);
    if constexpr (Pool::kBatchedMigration) {
      EXPECT_GT(st.migration.promotion_batches, 0u);
      // Batched migration's phases are parts of its total.
      EXPECT_GT(st.migration.fault_ns, 0u);
      EXPECT_GT(st.migration.copy_ns, 0u);
      EXPECT_GT(st.migration.discard_ns, 0u);
      EXPECT_LE(st.migration.fault_ns + st.migration.copy_ns + st.migration.discard_ns, st.migration.ns);
    } else {
      EXPECT_EQ(st.migration.fault_ns + st.migration.copy_ns + st.migration.discard_ns, 0u);
    }
    EXPECT_EQ(st.tier[0].frames, 8u);
    EXPECT_EQ(st.tier[1].frames, 16u);
    EXPECT_LE(st.tier[0].resident_pages, 8u);
    EXPECT_GT(st.tier[1].resident_pages, 0u);
    EXPECT_GT(st.faults, 0u);
  }
  // Closed (flushed) and reopened with one tier: every write is on disk, whichever tier its
  // page was in when the pool closed.
  PoolOptions one = testing::small_options(dir.path(), 8);
  auto pool = Pool::open(one);
  testing::expect_space(*pool, space, pages, [&](BlockId b) { return ref[b]; });
}

// An optimistic read that started before its page moved must fail validation even when the
// page comes back to the very frame the read started on (the free lists are LIFO, so it
// does): the frame's version seed was bumped when the page left it.
TYPED_TEST(TierPool, OptimisticReadAcrossAMoveAndBackDoesNotValidate) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(tier_options(dir.path(), 4, 4, /*promote=*/0));
  const size_t usable = pool->usable_page_size();
  const SpaceId space = pool->create_space("t");
  testing::fill_space(*pool, space, 2, [](BlockId b) { return uint64_t{b} + 7; });
  const PageId pid(space, 1);
  // One round trip first: the page then sits in its frame at the frame's version seed (no
  // write since it arrived), the case where a missing seed bump would repeat {frame, version}.
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 0));

  // Started in the fast tier.
  OptimisticRead r = pool->read_optimistic(pid);
  const FrameId fast_frame = r.seen.frame();
  ASSERT_LE(fast_frame, pool->internals().fast_frames());
  ASSERT_TRUE(Pool::validate(r));
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  const FrameId far_frame = pool->internals().frame_of(pid);
  ASSERT_GT(far_frame, pool->internals().fast_frames());
  EXPECT_FALSE(Pool::validate(r)) << "a read of the frame the page left validated";
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 0));
  ASSERT_EQ(pool->internals().frame_of(pid), fast_frame) << "the scenario needs the page back in its old frame";
  EXPECT_FALSE(Pool::validate(r)) << "{frame, version} repeated after a move out and back (frame ABA)";

  // Started in the far tier.
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  ASSERT_EQ(pool->internals().frame_of(pid), far_frame);
  OptimisticRead r2 = pool->read_optimistic(pid);
  ASSERT_EQ(r2.seen.frame(), far_frame);
  ASSERT_TRUE(Pool::validate(r2));
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 0));
  EXPECT_FALSE(Pool::validate(r2));
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  ASSERT_EQ(pool->internals().frame_of(pid), far_frame);
  EXPECT_FALSE(Pool::validate(r2)) << "{frame, version} repeated after a move out and back (frame ABA)";

  // The page survived four moves, and a fresh read validates.
  OptimisticRead r3 = pool->read_optimistic(pid);
  uint64_t stamp = 0;
  EXPECT_TRUE(test::check_pattern_racy(r3.data, usable, pid, &stamp));
  EXPECT_TRUE(Pool::validate(r3));
  EXPECT_EQ(stamp, 8u);
  PoolStats st = pool->stats();
  EXPECT_EQ(st.migration.promotions, 3u);
  EXPECT_EQ(st.migration.demotions, 4u);
  pool->check_invariants();
}

// A move never happens under a pin or a latch: move_to_tier gives up, and the page stays.
TYPED_TEST(TierPool, PinnedPagesDoNotMove) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(tier_options(dir.path(), 4, 4, /*promote=*/1));
  const SpaceId space = pool->create_space("t");
  testing::fill_space(*pool, space, 1, [](BlockId) { return 1; });
  const PageId pid(space, 0);
  const FrameId f = pool->internals().frame_of(pid);
  {
    SharedGuard g = pool->pin_shared(pid);
    EXPECT_FALSE(pool->internals().move_to_tier(pid, 1));
    EXPECT_EQ(pool->internals().frame_of(pid), f);
  }
  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  const FrameId far = pool->internals().frame_of(pid);
  {
    SharedGuard g = pool->pin_shared(pid);  // promote_on_read = 1: this pin promotes first
    EXPECT_LE(pool->internals().frame_of(pid), pool->internals().fast_frames());
    EXPECT_NE(pool->internals().frame_of(pid), far);
    EXPECT_FALSE(pool->internals().move_to_tier(pid, 1));
  }
  EXPECT_EQ(pool->stats().migration.promotions, 1u);
  pool->check_invariants();
}

// Threads read optimistically, pin shared and write exclusively while pages are promoted,
// demoted, evicted from the far tier and flushed. committed[b] is the stamp of b's last
// write (set under the exclusive latch): a shared pin sees exactly it, an optimistic read
// something between the stamps committed before and after it, a writer exactly it.
TYPED_TEST(TierPool, ConcurrentAccessWhilePagesMoveMatchesCommittedStamps) {
  using Pool = TypeParam;
  TempDir dir;
  const uint64_t pages = 64;
  const int ops = testing::kThreadSanitizer || testing::kAddressSanitizer ? 2000 : 6000;
  PoolOptions o = tier_options(dir.path(), 8, 8, 0.25);
  o.tiers.promotion_batch = 4;
  SpaceId space;
  std::vector<std::atomic<uint64_t>> committed(pages);
  {
    auto pool = Pool::open(o);
    const size_t usable = pool->usable_page_size();
    space = pool->create_space("t");
    testing::fill_space(*pool, space, pages, [](BlockId) { return 0; });
    std::atomic<bool> failed{false};
    std::atomic<int> workers_left{4};
    auto fail = [&](const std::string& why) {
      if (!failed.exchange(true)) ADD_FAILURE() << why;
    };
    auto worker = [&](int id) {
      std::mt19937_64 rng(100 + id);
      for (int op = 0; op < ops && !failed.load(); ++op) {
        const BlockId b = static_cast<BlockId>(rng() % pages);
        const PageId pid(space, b);
        const int kind = static_cast<int>(rng() % 8);
        if (kind < 4) {
          const uint64_t before = committed[b].load();
          auto [ok, stamp] = pool->optimistic_read(pid, [&](const std::byte* p) {
            uint64_t s = 0;
            bool good = test::check_pattern_racy(p, usable, pid, &s);
            return std::pair<bool, uint64_t>(good, s);
          });
          const uint64_t after = committed[b].load();
          if (!ok || stamp < before || stamp > after) {
            fail("optimistic read of block " + std::to_string(b) + ": pattern " + (ok ? "ok" : "BAD") + ", stamp " +
                 std::to_string(stamp) + " not in [" + std::to_string(before) + ", " + std::to_string(after) + "]");
          }
        } else if (kind < 6) {
          SharedGuard g = pool->pin_shared(pid);
          if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != committed[b].load()) {
            fail("shared pin of block " + std::to_string(b) + " does not hold its committed stamp");
          }
        } else {
          ExclusiveGuard g = pool->pin_exclusive(pid);
          const uint64_t s = committed[b].load();
          if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != s) {
            fail("exclusive pin of block " + std::to_string(b) + " does not hold its committed stamp");
          }
          test::stamp_pattern(g.data(), usable, pid, s + 1);
          g.mark_dirty();
          committed[b].store(s + 1);
        }
      }
      workers_left.fetch_sub(1);
    };
    // Moves pages both ways on purpose, holding a pin on another page (moves never wait).
    auto mover = [&] {
      std::mt19937_64 rng(7);
      while (workers_left.load() > 0 && !failed.load()) {
        const PageId held(space, static_cast<BlockId>(rng() % pages));
        const PageId pid(space, static_cast<BlockId>(rng() % pages));
        if (held == pid) continue;
        SharedGuard g = pool->pin_shared(held);
        pool->internals().move_to_tier(pid, static_cast<int>(rng() % 2));
      }
    };
    auto flusher = [&] {
      while (workers_left.load() > 0 && !failed.load()) {
        pool->flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back(worker, i);
    threads.emplace_back(mover);
    threads.emplace_back(flusher);
    for (auto& t : threads) t.join();
    ASSERT_FALSE(failed.load());
    pool->check_invariants();
    testing::expect_space(*pool, space, pages, [&](BlockId b) { return committed[b].load(); });
    PoolStats st = pool->stats();
    EXPECT_GT(st.migration.promotions, 0u);
    EXPECT_GT(st.migration.demotions, 0u);
    EXPECT_GT(st.tier[1].evictions, 0u);
    if constexpr (Pool::kBatchedMigration) {
      EXPECT_GT(st.migration.promotion_batches, 0u) << "no access-driven batch promotion ran during the stress";
    }
  }
  auto pool = Pool::open(testing::small_options(dir.path(), 8));
  testing::expect_space(*pool, space, pages, [&](BlockId b) { return committed[b].load(); });
}

// --- configuration ------------------------------------------------------------------------

TEST(TierPoolOptions, DefaultIsOneTier) {
  TempDir dir;
  auto pool = BasicBufferPool<translation::TieredArrayTranslation>::open(testing::small_options(dir.path(), 8));
  EXPECT_EQ(pool->internals().fast_frames(), pool->num_frames());
  PoolStats st = pool->stats();
  EXPECT_EQ(st.tier[0].frames, 8u);
  EXPECT_EQ(st.tier[1].frames, 0u);
  const SpaceId space = pool->create_space("t");
  testing::fill_space(*pool, space, 20, [](BlockId b) { return b; });
  EXPECT_FALSE(pool->internals().move_to_tier(PageId(space, 19), 1));
  st = pool->stats();
  EXPECT_EQ(st.tier[0].evictions, st.evictions);
  EXPECT_EQ(st.migration.promotions + st.migration.demotions + st.tier[1].hits + st.tier[1].evictions, 0u);
}

void expect_open_error(PoolOptions o, const std::string& names) {
  Error e = testing::expect_error(ErrorCode::kInvalidArgument,
                                  [&] { BasicBufferPool<translation::TieredArrayTranslation>::open(o); });
  EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what() << " does not name " << names;
}

TEST(TierPoolOptions, BadConfigurationsAreTypedErrorsNamingTheParameter) {
  TempDir dir;
  const PoolOptions good = tier_options(dir.path(), 8, 8, 0.5);
  {
    PoolOptions o = good;
    o.pool_bytes = 0;  // no fast frame
    expect_open_error(o, "pool_bytes");
  }
  {
    PoolOptions o = good;
    o.tiers.far.frames = uint64_t{1} << 31;  // frame ids of both tiers past 2^31
    expect_open_error(o, "tiers.far.frames");
  }
  {
    PoolOptions o = good;
    o.tiers.far = TierConfig::numa(8, 7);  // this machine has no node 7 (nor most others)
    expect_open_error(o, "NUMA node 7");
  }
  {
    PoolOptions o = good;
    o.tiers.far.extra_latency_ns = -1;
    expect_open_error(o, "tiers.far: emulated tier: extra latency");
  }
  {
    PoolOptions o = good;
    o.tiers.promote_on_read = 1.5;
    expect_open_error(o, "tiers.promote_on_read");
  }
  {
    PoolOptions o = good;
    o.tiers.far_lines_per_access = 65;
    expect_open_error(o, "tiers.far_lines_per_access");
  }
  // A policy that is not tiered refuses a far tier, naming itself: vmcache (pages in place)
  // and the plain array (no tier compare on its hot path).
  for (const std::string& name : {std::string("vmcache"), std::string("array")}) {
    Error e = testing::expect_error(ErrorCode::kInvalidArgument, [&] {
      variants::with_pool_type(name, [&]<class Pool>() { Pool::open(good); });
    });
    EXPECT_NE(std::string(e.what()).find("tiers.far: translation '" + name + "'"), std::string::npos) << e.what();
  }
  // Nothing was created by the failed opens.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  // And the good configuration opens.
  EXPECT_NO_THROW(BasicBufferPool<translation::TieredArrayTranslation>::open(good));
}

}  // namespace
}  // namespace calico
