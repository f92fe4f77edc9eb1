// Hole punching: translation memory follows the working set, and the punch cannot race
// with faults in the same page of entries.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace calico {
namespace {

using testing::TempDir;

constexpr size_t kGroup = 512;  // entries per 4 KB page of translation

TEST(HolePunching, TranslationMemoryFollowsTheWorkingSet) {
  TempDir dir;
  const uint32_t frames = 256;
  PoolOptions o = testing::stress_options(testing::small_options(dir.path(), frames));
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("t");
  const uint64_t pages = 64 * kGroup;  // 64 pages of entries, 128 MB of data
  testing::fill_space(*pool, s, pages, [](uint64_t) { return 1; });

  // A working set of 256 pages inside groups 0..1, then one inside groups 40..41.
  auto touch = [&](uint64_t first_block) {
    for (int round = 0; round < 3; ++round) {
      for (uint64_t b = first_block; b < first_block + frames; ++b) {
        pool->pin_shared(PageId(s, static_cast<BlockId>(b)));
      }
    }
  };
  touch(0);
  PoolStats a = pool->stats();
  touch(40 * kGroup);
  PoolStats b = pool->stats();

  // Resident frames can touch at most frames/512 + 1 groups, plus one page of counters.
  const size_t bound = (frames / kGroup + 2) * 4096 + 4096;
  EXPECT_LE(a.translation_private_bytes, bound);
  EXPECT_LE(b.translation_private_bytes, bound);
  EXPECT_GT(b.translation_private_bytes, 0u);
  EXPECT_GT(b.punches, a.punches) << "moving the working set must punch the old groups";
  // The whole array would be 64 pages; the load alone touched all of them once.
  EXPECT_LT(b.translation_private_bytes, pages * 8 / 8);
  EXPECT_GE(b.translation_mincore_bytes, b.translation_private_bytes);
  pool->check_invariants();
}

TEST(HolePunching, DropReturnsAllTranslationMemory) {
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  SpaceId keep = pool->create_space("keep");
  SpaceId gone = pool->create_space("gone");
  testing::fill_space(*pool, keep, 10, [](uint64_t) { return 0; });
  testing::fill_space(*pool, gone, 3 * kGroup, [](uint64_t) { return 0; });
  size_t before = pool->stats().translation_private_bytes;
  pool->drop_space(gone);
  size_t after = pool->stats().translation_private_bytes;
  EXPECT_LT(after, before);
  EXPECT_LE(after, 2 * 4096u) << "one page of entries and one of counters for 'keep'";
}

// The race of the paper's Algorithm 2: a fault latches an entry inside a page of entries
// that an evictor is punching. Many spaces of a few groups each, a pool of a few frames and
// many threads make nearly every eviction punch while other threads fault next to it.
// Every read checks the page's full pattern, and the end state is checked whole.
TEST(HolePunching, PunchesRaceFaultsSafely) {
  TempDir dir;
  const uint32_t frames = 12;
  const int threads = 8;
  const int spaces_n = 6;
  const uint64_t pages = 2 * kGroup;
  PoolOptions o = testing::stress_options(testing::small_options(dir.path(), frames));
  o.eviction_batch = 2;
  auto pool = BufferPool::open(o);
  std::vector<SpaceId> spaces;
  for (int i = 0; i < spaces_n; ++i) {
    spaces.push_back(pool->create_space("s" + std::to_string(i)));
    testing::fill_space(*pool, spaces.back(), pages, [](uint64_t b) { return b; });
  }
  uint64_t punches_before = pool->stats().punches;
  std::atomic<uint64_t> bad{0}, reads{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < 3000; ++i) {
        SpaceId s = spaces[rng() % spaces_n];
        // Mostly the first entries of each group: neighbours of recently punched entries.
        BlockId b = static_cast<BlockId>((rng() % 2) * kGroup + rng() % 4);
        PageId pid(s, b);
        if (i % 3 == 0) {
          bool ok = pool->optimistic_read(pid, [&](const std::byte* p) { return test::pattern_stamp_racy(p); }) == b;
          bad += !ok;
        } else {
          SharedGuard g = pool->pin_shared(pid);
          bad += !test::check_pattern(g.data(), pool->usable_page_size(), pid) || test::pattern_stamp(g.data()) != b;
        }
        ++reads;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(pool->stats().punches - punches_before, 1000u) << "the test must actually punch a lot";
  pool->check_invariants();
}

}  // namespace
}  // namespace calico
