// The pool over hash tables that delete a page's entry when it is evicted and recycle it for
// other pages (translation/hash/partitioned_table.h; entry.h, "Recycled entries"; pool/README.md):
//  - translation memory follows the resident pages: after touching many more pages than
//    frames, the table holds about the frames' worth of entries and its bytes stop growing;
//  - a multi-threaded stress on a tiny pool (constant eviction, so entries change pages all
//    the time) with writers, pinned readers, optimistic readers, no-wait latches, prefetch
//    groups and (lipah) hinted accesses, every page checksummed by a pattern that names its
//    page id and checked against a reference model.
// The tables are watched through a subclass that remembers the last table created, so the
// tests can count its entries; the policies are otherwise those of the registered variants.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pool/definitions.h"
#include "support/flusher.h"
#include "support/failure_log.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "translation/hash/hash_chained.h"
#include "translation/hash/hash_open.h"
#include "translation/lipah.h"

namespace calico {
namespace {

using testing::TempDir;

// A recycling table that registers itself (the pool creates one per space).
template <class Store>
struct WatchedTable : translation::PartitionedTable<Store> {
  WatchedTable(uint64_t capacity, const PoolOptions& options) : translation::PartitionedTable<Store>(capacity, options) {
    last.store(this);
  }
  static inline std::atomic<WatchedTable*> last{nullptr};
};

template <class Store, const char* kNameChars>
struct WatchedTranslation {
  static constexpr std::string_view kName = kNameChars;
  using Table = WatchedTable<Store>;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};
constexpr char kChained[] = "hash_chained";
constexpr char kOpen[] = "hash_open";
using ChainedPool = BasicBufferPool<WatchedTranslation<translation::ChainedStore, kChained>>;
using OpenPool = BasicBufferPool<WatchedTranslation<translation::OpenStore, kOpen>>;
using LipahPool = BasicBufferPool<translation::BasicLipahTranslation<WatchedTable<translation::OpenStore>>>;
static_assert(ChainedPool::kRecyclesEntries && OpenPool::kRecyclesEntries && LipahPool::kRecyclesEntries);
static_assert(BasicBufferPool<translation::HashOpenTranslation>::kRecyclesEntries &&
              BasicBufferPool<translation::LipahTranslation>::kRecyclesEntries && !BufferPool::kRecyclesEntries);

template <class Pool>
auto* table_of() {
  return Pool::TranslationPolicy::Table::last.load();
}

// Hinted accesses where the policy has frame hints (lipah), plain ones otherwise.
template <class Pool>
ExclusiveGuard pin_exclusive_maybe_hinted(Pool& pool, PageId pid, FrameId* hint) {
  if constexpr (Pool::kFrameHints) {
    return pool.pin_exclusive_hinted(pid, hint);
  } else {
    return pool.pin_exclusive(pid);
  }
}
template <class Pool>
SharedGuard pin_shared_maybe_hinted(Pool& pool, PageId pid, FrameId* hint) {
  if constexpr (Pool::kFrameHints) {
    return pool.pin_shared_hinted(pid, hint);
  } else {
    return pool.pin_shared(pid);
  }
}
template <class Pool>
OptimisticRead read_optimistic_maybe_hinted(Pool& pool, PageId pid, FrameId* hint) {
  if constexpr (Pool::kFrameHints) {
    return pool.read_optimistic_hinted(pid, hint);
  } else {
    return pool.read_optimistic(pid);
  }
}

template <class Pool>
class HashRecycling : public ::testing::Test {};
using RecyclingPools = ::testing::Types<ChainedPool, OpenPool, LipahPool>;
TYPED_TEST_SUITE(HashRecycling, RecyclingPools, testing::PoolName);

// Many more pages than frames pass through the pool: the table holds the resident pages (and
// at most a few in transit), and its memory after all of them is what it was after a fraction.
TYPED_TEST(HashRecycling, TranslationMemoryFollowsResidentPages) {
  using Pool = TypeParam;
  TempDir dir;
  constexpr uint32_t kFrames = 16;
  auto pool = Pool::open(testing::small_options(dir.path(), kFrames));
  SpaceId s = pool->create_space("s");
  auto* table = table_of<Pool>();
  ASSERT_NE(table, nullptr);
  const uint64_t pages = 3000;  // not scaled down for sanitizers: the bounds below need it
  size_t peak_entries = 0;
  size_t bytes_early = 0;
  for (uint64_t i = 0; i < pages; ++i) {
    ExclusiveGuard g = pool->allocate(s);
    test::stamp_pattern(g.data(), pool->usable_page_size(), g.page_id(), i);
    g.mark_dirty();
    peak_entries = std::max(peak_entries, table->size());
    if (i + 1 == pages / 4) bytes_early = pool->stats().translation_private_bytes;
  }
  // Read everything back twice (every read faults: 16 frames), and touch pages that are not
  // resident without faulting them (these must not leave entries behind).
  for (int round = 0; round < 2; ++round) {
    testing::expect_space(*pool, s, pages, [](uint64_t b) { return b; });
    for (uint64_t b = 0; b < pages; b += 7) {
      PageId pid(s, static_cast<BlockId>(b));
      pool->try_pin_exclusive(pid);
      pool->internals().frame_of(pid);
      peak_entries = std::max(peak_entries, table->size());
    }
  }
  // Past the end of the space: a fault that fails must not leave its entry either.
  testing::expect_error(ErrorCode::kPageOutOfRange, [&] { pool->pin_shared(PageId(s, static_cast<BlockId>(pages + 5))); });
  PoolStats st = pool->stats();
  EXPECT_GT(st.evictions, pages);
  EXPECT_LE(st.resident_pages, kFrames);
  EXPECT_LE(table->size(), st.resident_pages) << "entries of evicted pages were deleted";
  EXPECT_LE(peak_entries, kFrames + 2) << "one fault in flight beyond the frames";
  // Entries ever created (in the maps or free) are the sum of the 64 partitions' peaks, as
  // free entries are kept per partition: a few per partition, not one per page touched.
  EXPECT_LE(table->free_size() + table->size(), 64u * 4);
  EXPECT_LE(st.translation_private_bytes, bytes_early + bytes_early / 10) << "memory stopped growing";
  EXPECT_LT(st.translation_private_bytes, pages * 32) << "below one node per page touched";
  std::printf("%s: %lu pages through %u frames: %zu entries (peak %zu, %zu free), %lu bytes (%zu after a quarter)\n",
              std::string(Pool::kTranslationName).c_str(), (unsigned long)pages, kFrames, table->size(), peak_entries,
              table->free_size(), (unsigned long)st.translation_private_bytes, bytes_early);
  pool->check_invariants();
  pool->drop_space(s);
  EXPECT_EQ(table->size(), 0u);
  pool->check_invariants();
}

// A reader of page p must never accept bytes of another page: entries move between pages
// on every eviction here (8 frames for 96 pages), so a stale entry pointer is the common
// case, not the rare one. Every page carries a pattern naming its page id and a stamp; the
// model holds each page's stamp (changed only under the page's exclusive latch).
TYPED_TEST(HashRecycling, StressWithConstantRecyclingMatchesModel) {
  using Pool = TypeParam;
  TempDir dir;
  constexpr uint32_t kFrames = 8;
  constexpr uint64_t kPages = 96;
  constexpr int kThreads = 4;
  PoolOptions o = testing::stress_options(testing::small_options(dir.path(), kFrames));
  o.eviction_batch = 2;
  auto pool = Pool::open(o);
  const size_t usable = pool->usable_page_size();
  SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, kPages, [](uint64_t) { return 0; });
  std::vector<std::atomic<uint64_t>> model(kPages);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0}, pinned{0}, optimistic{0}, hinted{0}, try_latched{0};
  testing::FailureLog fail;
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      const uint64_t seed = 4242 + t;
      std::mt19937_64 rng(seed);
      std::vector<FrameId> hints(kPages, kInvalidFrame);  // this thread's frame hints (lipah)
      std::vector<PageId> group(4);
      while (!stop.load(std::memory_order_relaxed)) {
        auto b = static_cast<BlockId>(rng() % kPages);
        PageId pid(s, b);
        unsigned dice = rng() % 100;
        try {
          if (dice < 20) {
            ExclusiveGuard g = (Pool::kFrameHints && dice % 2 == 0) ? pin_exclusive_maybe_hinted(*pool, pid, &hints[b])
                                                                    : pool->pin_exclusive(pid);
            uint64_t expect = model[b].load();
            if (g.page_id() != pid || !test::check_pattern(g.data(), usable, pid) ||
                test::pattern_stamp(g.data()) != expect) {
              fail("write: page " + std::to_string(b) + " is not the model's (seed " + std::to_string(seed) + ")");
            }
            test::stamp_pattern(g.data(), usable, pid, expect + 1);
            model[b].store(expect + 1);
            g.mark_dirty();
            ++writes;
          } else if (dice < 40) {
            SharedGuard g = (Pool::kFrameHints && dice % 2 == 0) ? pin_shared_maybe_hinted(*pool, pid, &hints[b])
                                                                 : pool->pin_shared(pid);
            if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != model[b].load()) {
              fail("shared read: page " + std::to_string(b) + " differs from the model (seed " + std::to_string(seed) + ")");
            }
            ++pinned;
          } else if (dice < 80) {
            // Optimistic: validated bytes must be pid's (the pattern names it) and not newer
            // than the model (a writer updates the model before releasing its latch).
            uint64_t stamp = 0;
            bool ok = false;
            for (int attempt = 0;; ++attempt) {
              OptimisticRead r = (Pool::kFrameHints && dice % 2 == 0) ? read_optimistic_maybe_hinted(*pool, pid, &hints[b])
                                                                      : pool->read_optimistic(pid);
              ok = test::check_pattern_racy(r.data, usable, pid, &stamp);
              if (Pool::validate(r)) break;
              if (attempt > 1000) {
                fail("optimistic read never validated");
                break;
              }
            }
            if (!ok || stamp > model[b].load()) {
              fail("optimistic read: validated another page's or a future image of page " + std::to_string(b) +
                   " (seed " + std::to_string(seed) + ")");
            }
            ++optimistic;
            if (Pool::kFrameHints && dice % 2 == 0) ++hinted;
          } else if (dice < 90) {
            ExclusiveGuard g = pool->try_pin_exclusive(pid);
            if (g.held()) {
              if (!test::check_pattern(g.data(), usable, pid) || test::pattern_stamp(g.data()) != model[b].load()) {
                fail("try_pin_exclusive: page " + std::to_string(b) + " differs from the model");
              }
              ++try_latched;
            }
            (void)pool->internals().frame_of(pid);
          } else {
            for (auto& p : group) p = PageId(s, static_cast<BlockId>(rng() % kPages));
            pool->prefetch_group(group);
          }
        } catch (const Error& e) {
          fail(std::string("unexpected error: ") + e.what());
        }
      }
    });
  }
  std::thread flusher = testing::periodic_flusher(*pool, stop, std::chrono::milliseconds(100), std::ref(fail));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  stop = true;
  for (auto& w : workers) w.join();
  flusher.join();

  EXPECT_EQ(fail.count(), 0u) << fail.first();
  PoolStats st = pool->stats();
  EXPECT_GT(st.evictions, 1000u) << "entries must be recycled constantly";
  EXPECT_GT(writes.load(), 100u);
  EXPECT_GT(optimistic.load(), 100u);
  std::printf("%s: %lu writes, %lu pins, %lu optimistic (%lu hinted), %lu try-latches, %lu evictions, %zu entries\n",
              std::string(Pool::kTranslationName).c_str(), (unsigned long)writes.load(), (unsigned long)pinned.load(),
              (unsigned long)optimistic.load(), (unsigned long)hinted.load(), (unsigned long)try_latched.load(),
              (unsigned long)st.evictions, table_of<Pool>()->size());
  pool->check_invariants();
  EXPECT_LE(table_of<Pool>()->size(), kFrames);
  testing::expect_space(*pool, s, kPages, [&](uint64_t b) { return model[b].load(); });
  pool.reset();  // flushes
  pool = Pool::open(o);
  testing::expect_space(*pool, s, kPages, [&](uint64_t b) { return model[b].load(); });
  pool->check_invariants();
}

}  // namespace
}  // namespace calico
