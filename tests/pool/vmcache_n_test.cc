// vmcache^n in user space (docs/results/tiers.md; translation/vmcache_n.h): what is particular to it
// beyond the tier tests it shares with Calico tiers (tests/pool/tier_pool_test.cc runs every
// migration test, the concurrent one included, on vmcache_n too):
//  - a page's bytes live in the region of its token's tier, and a move discards the source
//    (the stale address reads as zeros) while the contents arrive intact;
//  - promotions are queued and run promotion_batch at a time, by the access that fills the
//    queue; demotion and far eviction rounds take demotion_batch pages, not eviction_batch;
//  - bad batch sizes are typed errors naming the option; plain vmcache refuses a far tier.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "support/page_pattern.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "translation/vmcache_n.h"

namespace calico {
namespace {

using testing::TempDir;
using memory::tiers::TierConfig;
using Pool = BasicBufferPool<translation::VmcacheNTranslation>;

PoolOptions vmcache_n_options(const std::string& dir, uint32_t fast, uint32_t far) {
  PoolOptions o = testing::small_options(dir, fast);
  o.eviction_batch = 2;
  o.tiers.far = TierConfig::remote_numa(far);
  o.tiers.far.extra_latency_ns = 5;
  o.tiers.far.migration_bytes_per_s = 0;  // unthrottled: no waiting for tokens
  o.tiers.promote_on_read = 0;
  o.tiers.promote_on_write = 0;
  return o;
}

bool all_zero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

TEST(VmcacheN, MoveCopiesIntoTheOtherRegionAndDiscardsTheSource) {
  TempDir dir;
  auto pool = Pool::open(vmcache_n_options(dir.path(), 8, 8));
  const size_t usable = pool->usable_page_size();
  const SpaceId space = pool->create_space("t");
  testing::fill_space(*pool, space, 2, [](BlockId b) { return uint64_t{b} + 40; });
  const PageId pid(space, 1);
  const std::byte* fast_addr = pool->pin_shared(pid).data();

  ASSERT_TRUE(pool->internals().move_to_tier(pid, 1));
  ASSERT_GT(pool->internals().frame_of(pid), pool->internals().fast_frames());
  const std::byte* far_addr;
  {
    SharedGuard g = pool->pin_shared(pid);
    far_addr = g.data();
    EXPECT_NE(far_addr, fast_addr) << "the far tier's page must be in the far region";
    EXPECT_TRUE(test::check_pattern(g.data(), usable, pid));
    EXPECT_EQ(test::pattern_stamp(g.data()), 41u);
  }
  // The source was returned to the OS (MADV_DONTNEED): its address stays mapped and reads
  // zeros (a stale reader would fail its validation, never crash).
  EXPECT_TRUE(all_zero(fast_addr, pool->page_size())) << "the fast region still holds the moved page";

  ASSERT_TRUE(pool->internals().move_to_tier(pid, 0));
  {
    SharedGuard g = pool->pin_shared(pid);
    EXPECT_EQ(g.data(), fast_addr) << "a page's address in a tier is fixed: region + block * page size";
    EXPECT_EQ(test::pattern_stamp(g.data()), 41u);
  }
  EXPECT_TRUE(all_zero(far_addr, pool->page_size())) << "the far region still holds the moved page";
  PoolStats st = pool->stats();
  EXPECT_EQ(st.migration.promotions, 1u);
  EXPECT_EQ(st.migration.demotions, 1u);
  EXPECT_EQ(st.migration.bytes, 2 * pool->page_size());
  EXPECT_GT(st.migration.ns, 0u);
  pool->check_invariants();
}

// promotion_batch = 5 and every far access draws promotion: the first four accesses only
// queue their pages; the fifth migrates all five together.
TEST(VmcacheN, PromotionsAreQueuedAndMigratedInBatches) {
  TempDir dir;
  PoolOptions o = vmcache_n_options(dir.path(), 16, 32);
  o.tiers.promote_on_read = 1;
  o.tiers.promotion_batch = 5;
  auto pool = Pool::open(o);
  const size_t usable = pool->usable_page_size();
  const SpaceId space = pool->create_space("t");
  const uint64_t pages = 12;
  testing::fill_space(*pool, space, pages, [](BlockId b) { return uint64_t{b} * 3; });
  for (uint64_t b = 0; b < pages; ++b) ASSERT_TRUE(pool->internals().move_to_tier(PageId(space, static_cast<BlockId>(b)), 1));
  const uint64_t demotions = pool->stats().migration.demotions;

  auto read = [&](BlockId b) {
    const PageId pid(space, b);
    return pool->optimistic_read(pid, [&](const std::byte* p) {
      uint64_t s = 0;
      return test::check_pattern_racy(p, usable, pid, &s) ? s : ~uint64_t{0};
    });
  };
  for (BlockId b = 0; b < 4; ++b) {
    EXPECT_EQ(read(b), uint64_t{b} * 3);
    EXPECT_EQ(read(b), uint64_t{b} * 3);  // queued once only
    EXPECT_GT(pool->internals().frame_of(PageId(space, b)), pool->internals().fast_frames()) << "block " << b << " moved before its batch";
  }
  EXPECT_EQ(pool->stats().migration.promotions, 0u);
  EXPECT_EQ(read(4), 12u);
  PoolStats st = pool->stats();
  EXPECT_EQ(st.migration.promotions, 5u);
  EXPECT_EQ(st.migration.promotion_batches, 1u);
  EXPECT_EQ(st.migration.demotions, demotions);
  for (BlockId b = 0; b < 5; ++b) {
    EXPECT_LE(pool->internals().frame_of(PageId(space, b)), pool->internals().fast_frames()) << "block " << b << " was not promoted";
    EXPECT_EQ(read(b), uint64_t{b} * 3);
  }
  for (BlockId b = 5; b < pages; ++b) EXPECT_GT(pool->internals().frame_of(PageId(space, b)), pool->internals().fast_frames());
  pool->check_invariants();
}

// Demotion rounds move demotion_batch pages and far eviction rounds evict as many, where the
// other tiered policies use eviction_batch (2 here).
TEST(VmcacheN, DemotionAndFarEvictionRoundsTakeDemotionBatchPages) {
  TempDir dir;
  PoolOptions o = vmcache_n_options(dir.path(), 8, 12);
  o.tiers.demotion_batch = 6;
  auto pool = Pool::open(o);
  const SpaceId space = pool->create_space("t");
  uint64_t first_demotions = 0, first_far_evictions = 0;
  for (uint64_t b = 0; b < 64 && (first_demotions == 0 || first_far_evictions == 0); ++b) {
    testing::fill_space(*pool, space, 1, [&](BlockId) { return b; });
    PoolStats st = pool->stats();
    if (first_demotions == 0) first_demotions = st.migration.demotions;
    if (first_far_evictions == 0) first_far_evictions = st.tier[1].evictions;
  }
  EXPECT_EQ(first_demotions, 6u);
  EXPECT_EQ(first_far_evictions, 6u);
  EXPECT_EQ(pool->stats().tier[0].evictions, 0u) << "a fast page went to disk without passing the far tier";
  pool->check_invariants();
}

void expect_open_error(const PoolOptions& o, const std::string& names) {
  Error e = testing::expect_error(ErrorCode::kInvalidArgument, [&] { Pool::open(o); });
  EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what() << " does not name " << names;
}

TEST(VmcacheN, BadConfigurationsAreTypedErrors) {
  TempDir dir;
  const PoolOptions good = vmcache_n_options(dir.path(), 8, 8);
  for (uint32_t bad : {0u, 65537u}) {
    PoolOptions o = good;
    o.tiers.demotion_batch = bad;
    expect_open_error(o, "tiers.demotion_batch");
  }
  for (uint32_t bad : {0u, 4097u}) {
    PoolOptions o = good;
    o.tiers.promotion_batch = bad;
    expect_open_error(o, "tiers.promotion_batch");
  }
  {
    PoolOptions o = good;
    o.tiers.far = TierConfig::numa(8, 7);  // no node 7 here
    expect_open_error(o, "NUMA node 7");
  }
  {
    PoolOptions o = good;
    o.pool_bytes = 0;
    expect_open_error(o, "pool_bytes");
  }
  // Plain vmcache keeps one region per space: it takes no far tier.
  Error e = testing::expect_error(ErrorCode::kInvalidArgument,
                                  [&] { BasicBufferPool<translation::VmcacheTranslation>::open(good); });
  EXPECT_NE(std::string(e.what()).find("tiers.far"), std::string::npos) << e.what();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  EXPECT_NO_THROW(Pool::open(good));
}

}  // namespace
}  // namespace calico
