// HNSW removal and filtered search (include/calico/index/hnsw.h, "Removal and filters"),
// against a brute-force model: random interleavings of add, remove and searches with and
// without allow-lists on pools far smaller than the index (every step evicts), with
// check_structure and the model compared after each phase; a search never returns a removed
// or filtered-out id and returns min(k, admissible) results; the exact scan equals brute
// force; concurrent adds, removes and filtered searches; persistence; bad input; a
// version-1 index opens and is upgraded by its first remove.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "calico/index/hnsw.h"
#include "support/failure_log.h"
#include "support/filter_model.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "support/vector_data.h"

namespace calico {
namespace {

using index::BasicHnsw;
using index::HnswFilter;
using index::HnswMeta;
using index::HnswParams;
using index::HnswSearchOptions;
using index::HnswSearchState;
using testing::TempDir;
using vector::Metric;
using vector::Neighbor;

constexpr uint32_t kDim = 16;
constexpr uint32_t kCapacity = 900;
constexpr uint32_t kK = 10;
constexpr uint32_t kEf = 48;
constexpr uint32_t kTinyPoolFrames = 30;  // 900 slots: 32 level-0 pages, the upper region and the meta: every step evicts

HnswParams params() {
  HnswParams p;
  p.dim = kDim;
  p.M = 8;
  p.ef_construction = 64;
  return p;
}

// The brute-force model (tests/support/filter_model.h) over this file's ids and k.
struct Model : testing::FilterModel {
  explicit Model(const testing::Data& d) : testing::FilterModel{d, kCapacity, kK} {}
};
using testing::expect_admissible;
using testing::expect_invalid;
std::vector<uint64_t> random_allow_list(std::mt19937_64& rng, double fraction) {
  return testing::random_allow_list(rng, fraction, kCapacity);
}

template <class Pool>
class HnswRemoveFilterOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(HnswRemoveFilterOnEveryTranslation, testing::IndexPools, testing::PoolName);

// Six phases of 160 random steps (add an unused id 45%, remove a live id 25%, search 30%:
// no filter, or allow-lists of 1%, 10%, 50% of the ids), each phase ending with
// check_structure, size() and contains() against the model, every other phase with a
// consolidate() (the removed ids then unused: added again later); every search result checked
// (expect_admissible); the graph searches' mean recall against the model's exact answer at
// least 0.9; forcing the exact scan gives exactly the model's answer; search_batch with
// tombstones gives what search gives.
TYPED_TEST(HnswRemoveFilterOnEveryTranslation, RandomAddsRemovesAndFilteredSearchesMatchTheModel) {
  TempDir dir;
  const testing::Data data = testing::clustered(kCapacity, kDim, 30, 40, 7);
  Model model(data);
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kTinyPoolFrames));
  auto h = BasicHnsw<TypeParam>::create(*pool, "hnsw", params(), kCapacity);
  HnswSearchState st(h);
  std::mt19937_64 rng(11);
  std::vector<uint32_t> unused(kCapacity);
  for (uint32_t i = 0; i < kCapacity; ++i) unused[i] = i;
  std::shuffle(unused.begin(), unused.end(), rng);
  double recall_sum = 0;
  uint32_t graph_searches = 0;
  std::vector<Neighbor> got;
  for (int phase = 0; phase < 6; ++phase) {
    for (int step = 0; step < 160; ++step) {
      const uint32_t r = static_cast<uint32_t>(rng() % 100);
      if (r < 45 && !unused.empty()) {
        const uint32_t id = unused.back();
        unused.pop_back();
        h.add(id, data.row(id));
        model.live[id] = 1;
      } else if (r < 70 && model.live_count() > 0) {
        uint32_t id;
        do id = static_cast<uint32_t>(rng() % kCapacity); while (!model.live[id]);
        h.remove(id);
        model.live[id] = 0;
      } else {
        const float* q = data.query(rng() % data.num_queries());
        const double fractions[] = {0.0, 0.01, 0.1, 0.5};
        const double fraction = fractions[rng() % 4];
        std::vector<uint64_t> allow;
        if (fraction > 0) allow = random_allow_list(rng, fraction);
        const std::vector<uint64_t>* a = fraction > 0 ? &allow : nullptr;
        HnswSearchOptions opt{kK, kEf, true, true};
        opt.exact_scan_below = 1;  // the graph search, whatever the selectivity
        if (a) h.search(q, opt, st, &got, HnswFilter{allow}); else h.search(q, opt, st, &got);
        const std::string what = "phase " + std::to_string(phase) + " step " + std::to_string(step) +
                                 " fraction " + std::to_string(fraction);
        ASSERT_NO_FATAL_FAILURE(expect_admissible(model, q, a, got, what + " (graph)"));
        size_t admissible = 0;
        const std::vector<Neighbor> want = model.exact(q, a, &admissible);
        if (!want.empty()) {
          recall_sum += testing::recall(got, want);
          ++graph_searches;
        }
        opt.exact_scan_below = kCapacity + 1;  // the exact scan of the allowed ids
        if (a) h.search(q, opt, st, &got, HnswFilter{allow}); else h.search(q, opt, st, &got);
        if (a) {
          EXPECT_EQ(got, want) << what << " (exact scan)";
        } else {
          // Without a filter there is no exact-scan choice; the graph search again.
          ASSERT_NO_FATAL_FAILURE(expect_admissible(model, q, a, got, what + " (unfiltered)"));
        }
      }
    }
    ASSERT_NO_THROW(h.check_structure()) << "phase " << phase;
    EXPECT_EQ(h.size(), model.live_count());
    if (phase % 2 == 1) {  // consolidate: the removed ids become unused, to be added again
      uint32_t removed = 0;
      for (uint32_t id = 0; id < kCapacity; ++id) {
        if (h.removed(id)) {
          ++removed;
          unused.insert(unused.begin(), id);
        }
      }
      EXPECT_EQ(h.consolidate(), removed) << "phase " << phase;
      ASSERT_NO_THROW(h.check_structure()) << "phase " << phase << " after consolidate";
      EXPECT_EQ(h.size(), model.live_count());
      for (uint32_t id = 0; id < kCapacity; ++id) ASSERT_FALSE(h.removed(id)) << "id " << id;
    }
    for (uint32_t id = 0; id < kCapacity; ++id) ASSERT_EQ(h.contains(id), model.live[id] == 1) << "id " << id;
    // search_batch with tombstones: what search() returns, query by query.
    std::vector<HnswSearchState> states;
    for (int i = 0; i < 5; ++i) states.emplace_back(h);
    std::vector<HnswSearchState*> sp;
    for (auto& s : states) sp.push_back(&s);
    std::vector<const float*> qs;
    for (uint32_t i = 0; i < 5; ++i) qs.push_back(data.query(i));
    std::vector<std::vector<Neighbor>> outs(5);
    const HnswSearchOptions opt{kK, kEf, true, true};
    h.search_batch(qs, opt, sp, outs);
    for (uint32_t i = 0; i < 5; ++i) {
      h.search(qs[i], opt, st, &got);
      EXPECT_EQ(outs[i], got) << "phase " << phase << " query " << i;
    }
  }
  ASSERT_GT(graph_searches, 100u);
  EXPECT_GE(recall_sum / graph_searches, 0.9);
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the index must not fit the pool";
  pool->check_invariants();
}

// Adds (one thread, ids in order), removes (one thread, of ids whose add returned),
// consolidations (one thread) and filtered and unfiltered searches (two threads) at once, on
// a pool smaller than the index.
// A search never returns an id removed before it started, nor one its filter excludes, nor
// a wrong distance; afterwards the structure holds and the model agrees.
TEST(HnswRemoveFilter, ConcurrentAddsRemovesAndFilteredSearches) {
  TempDir dir;
  const testing::Data data = testing::clustered(kCapacity, kDim, 30, 40, 9);
  auto pool = BufferPool::open(testing::stress_options(testing::pool_options<BufferPool>(dir.path(), kTinyPoolFrames)));
  auto h = BasicHnsw<BufferPool>::create(*pool, "hnsw", params(), kCapacity);
  std::atomic<uint32_t> added{0};      // ids below it were added
  std::atomic<uint64_t> clock{1};      // orders removes and search starts
  std::vector<std::atomic<uint64_t>> removed_at(kCapacity);  // the clock when remove(id) returned; 0: live
  std::atomic<bool> stop{false};
  testing::FailureLog failures;
  std::thread adder([&] {
    for (uint32_t id = 0; id < kCapacity; ++id) {
      h.add(id, data.row(id));
      added.store(id + 1, std::memory_order_release);
    }
  });
  std::thread remover([&] {
    std::mt19937_64 rng(3);
    uint32_t removed = 0;
    while (removed < kCapacity / 3) {
      const uint32_t n = added.load(std::memory_order_acquire);
      if (n < 10) {
        std::this_thread::yield();
        continue;
      }
      const uint32_t id = static_cast<uint32_t>(rng() % n);
      if (removed_at[id].load() != 0) continue;
      h.remove(id);
      removed_at[id].store(clock.fetch_add(1));
      ++removed;
    }
  });
  auto searcher = [&](uint64_t seed) {
    HnswSearchState st(h);
    std::mt19937_64 rng(seed);
    std::vector<Neighbor> got;
    vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
    while (!stop.load()) {
      const float* q = data.query(rng() % data.num_queries());
      const bool filtered = rng() % 2 == 0;
      const std::vector<uint64_t> allow = random_allow_list(rng, 0.2);
      const uint64_t start = clock.fetch_add(1);
      if (filtered) h.search(q, HnswSearchOptions{kK, kEf, true, true}, st, &got, HnswFilter{allow});
      else h.search(q, HnswSearchOptions{kK, kEf, true, true}, st, &got);
      for (const Neighbor& n : got) {
        const uint64_t r = removed_at[n.id].load();
        if (r != 0 && r < start) failures("returned id " + std::to_string(n.id) + ", removed before the search");
        if (filtered && !HnswFilter{allow}.allows(n.id)) failures("returned filtered-out id " + std::to_string(n.id));
        if (n.distance != dist(q, data.row(n.id), kDim)) {
          failures("wrong distance for id " + std::to_string(n.id) + ": " + std::to_string(n.distance) + " for " +
                   std::to_string(dist(q, data.row(n.id), kDim)) + (filtered ? ", filtered" : ", unfiltered") +
                   ", removed at " + std::to_string(r) + ", search from " + std::to_string(start) + " to " +
                   std::to_string(clock.load()) + "; to a zero vector " +
                   std::to_string(dist(q, std::vector<float>(kDim, 0.0f).data(), kDim)));
        }
      }
    }
  };
  std::thread s1(searcher, 21), s2(searcher, 22);
  // Consolidations meanwhile: they wait for the running add or remove and block the next,
  // while the searches go on over lists being rewritten and slots being freed.
  std::thread consolidator([&] {
    while (!stop.load()) {
      (void)h.consolidate();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  adder.join();
  remover.join();
  stop.store(true);
  s1.join();
  s2.join();
  consolidator.join();
  EXPECT_EQ(failures.count(), 0u) << failures.first();
  ASSERT_NO_THROW(h.check_structure());
  Model model(data);
  for (uint32_t id = 0; id < kCapacity; ++id) model.live[id] = removed_at[id].load() == 0;
  EXPECT_EQ(h.size(), model.live_count());
  HnswSearchState st(h);
  std::vector<Neighbor> got;
  double recall_sum = 0;
  for (uint32_t q = 0; q < data.num_queries(); ++q) {
    h.search(data.query(q), HnswSearchOptions{kK, kEf, true, true}, st, &got);
    ASSERT_NO_FATAL_FAILURE(expect_admissible(model, data.query(q), nullptr, got, "query " + std::to_string(q)));
    size_t admissible;
    recall_sum += testing::recall(got, model.exact(data.query(q), nullptr, &admissible));
  }
  EXPECT_GE(recall_sum / data.num_queries(), 0.9);
}

// Removed ids stay removed across a reopen in a new pool; size() and the metadata's count
// of tombstones persist; searches there exclude them.
TEST(HnswRemoveFilter, RemovalsSurviveAReopen) {
  TempDir dir;
  const testing::Data data = testing::clustered(300, kDim, 10, 20, 5);
  Model model(data);
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    auto h = BasicHnsw<BufferPool>::create(*pool, "hnsw", params(), kCapacity);
    for (uint32_t id = 0; id < 300; ++id) h.add(id, data.row(id)), model.live[id] = 1;
    for (uint32_t id = 0; id < 300; id += 3) h.remove(id), model.live[id] = 0;
    pool->flush();
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  auto h = BasicHnsw<BufferPool>::open(*pool, "hnsw");
  EXPECT_EQ(h.size(), 200u);
  EXPECT_TRUE(h.removed(0));
  EXPECT_FALSE(h.removed(1));
  ASSERT_NO_THROW(h.check_structure());
  HnswSearchState st(h);
  std::vector<Neighbor> got;
  for (uint32_t q = 0; q < data.num_queries(); ++q) {
    h.search(data.query(q), HnswSearchOptions{kK, kEf, true, true}, st, &got);
    ASSERT_NO_FATAL_FAILURE(expect_admissible(model, data.query(q), nullptr, got, "query " + std::to_string(q)));
  }
}

// Churn ([FreshDiskANN]'s experiment in miniature): 600 nodes, then 6 rounds that each
// remove 20% at random, consolidate, and add those ids again with new vectors (so 120% is
// replaced). After every round the structure holds and recall@10 against brute force on
// the current vectors stays within 0.03 of a fresh build of the same vectors.
TEST(HnswRemoveFilter, RecallHoldsUnderChurnWithConsolidation) {
  constexpr uint32_t kNodes = 600;
  TempDir dir;
  const testing::Data data = testing::clustered(kNodes * 7, kDim, 30, 60, 13);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 256));
  auto h = BasicHnsw<BufferPool>::create(*pool, "churn", params(), kNodes);
  std::vector<uint32_t> row_of(kNodes);  // the data row node id holds now
  for (uint32_t id = 0; id < kNodes; ++id) h.add(id, data.row(row_of[id] = id));
  auto recall_of = [&](const BasicHnsw<BufferPool>& index) {
    HnswSearchState st(index);
    std::vector<Neighbor> got;
    vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
    double sum = 0;
    for (uint32_t q = 0; q < data.num_queries(); ++q) {
      std::vector<Neighbor> want;
      for (uint32_t id = 0; id < kNodes; ++id) want.push_back({dist(data.query(q), data.row(row_of[id]), kDim), id});
      std::sort(want.begin(), want.end());
      want.resize(kK);
      index.search(data.query(q), HnswSearchOptions{kK, 32, true, true}, st, &got);
      sum += testing::recall(got, want);
    }
    return sum / data.num_queries();
  };
  std::mt19937_64 rng(17);
  uint32_t next_row = kNodes;
  for (int round = 1; round <= 6; ++round) {
    std::vector<uint32_t> ids(kNodes);
    for (uint32_t i = 0; i < kNodes; ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize(kNodes / 5);
    for (uint32_t id : ids) h.remove(id);
    EXPECT_EQ(h.consolidate(), kNodes / 5);
    for (uint32_t id : ids) h.add(id, data.row(row_of[id] = next_row++));
    ASSERT_NO_THROW(h.check_structure()) << "round " << round;
    EXPECT_EQ(h.size(), kNodes);
    // A fresh build of the same vectors, inserted in id order.
    auto fresh = BasicHnsw<BufferPool>::create(*pool, "fresh" + std::to_string(round), params(), kNodes);
    for (uint32_t id = 0; id < kNodes; ++id) fresh.add(id, data.row(row_of[id]));
    const double churned = recall_of(h), rebuilt = recall_of(fresh);
    EXPECT_GE(churned, rebuilt - 0.03) << "round " << round << ": churned " << churned << ", fresh " << rebuilt;
    EXPECT_GE(churned, 0.9) << "round " << round;
  }
}

// Consolidation repairs a list by filling the places of its removed members; its live
// members all stay (pruning them with the new candidates lost recall after churn:
// docs/results/vector_churn.md). Checked on every level-0 list, read from the pages.
TEST(HnswRemoveFilter, ConsolidationKeepsEveryLiveNeighbour) {
  constexpr uint32_t kNodes = 600;
  TempDir dir;
  const testing::Data data = testing::clustered(kNodes, kDim, 30, 10, 29);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 256));
  auto h = BasicHnsw<BufferPool>::create(*pool, "keep", params(), kNodes);
  for (uint32_t id = 0; id < kNodes; ++id) h.add(id, data.row(id));
  const index::HnswLayout& L = h.layout();
  auto level0 = [&](uint32_t id) {  // level-0 extent 0 is blocks 1 .. (an index that never grew)
    SharedGuard g = pool->pin_shared(PageId(h.space(), 1 + id / L.per_page));
    const std::byte* row = g.data() + L.row_offset(id);
    uint32_t count;
    std::memcpy(&count, row, 4);
    std::vector<uint32_t> ids(count);
    std::memcpy(ids.data(), row + sizeof(index::HnswRowHead), 4 * size_t{count});
    return ids;
  };
  std::mt19937_64 rng(5);
  std::vector<uint32_t> order(kNodes);
  for (uint32_t i = 0; i < kNodes; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint8_t> removed(kNodes, 0);
  for (uint32_t i = 0; i < kNodes / 5; ++i) h.remove(order[i]), removed[order[i]] = 1;
  std::vector<std::vector<uint32_t>> survivors(kNodes);
  uint64_t repaired = 0;
  for (uint32_t p = 0; p < kNodes; ++p) {
    if (removed[p]) continue;
    const std::vector<uint32_t> before = level0(p);
    bool names_removed = false;
    for (uint32_t v : before) {
      if (removed[v]) names_removed = true;
      else survivors[p].push_back(v);
    }
    repaired += names_removed;
  }
  ASSERT_GT(repaired, kNodes / 4) << "too few lists named a removed node to test the repair";
  EXPECT_EQ(h.consolidate(), kNodes / 5);
  ASSERT_NO_THROW(h.check_structure());
  for (uint32_t p = 0; p < kNodes; ++p) {
    if (removed[p]) continue;
    const std::vector<uint32_t> after = level0(p);
    for (uint32_t v : survivors[p]) {
      EXPECT_NE(std::find(after.begin(), after.end(), v), after.end()) << "node " << p << " lost live neighbour " << v;
    }
    for (uint32_t v : after) EXPECT_FALSE(removed[v]) << "node " << p << " still names removed node " << v;
  }
}

// Bad input: each call fails with kInvalidArgument naming the id, and the index is as before
// (size, contains, the structure).
TEST(HnswRemoveFilter, BadInputLeavesTheIndexUnchanged) {
  TempDir dir;
  const testing::Data data = testing::clustered(50, kDim, 5, 5, 3);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  auto h = BasicHnsw<BufferPool>::create(*pool, "hnsw", params(), 100);
  for (uint32_t id = 0; id < 50; ++id) h.add(id, data.row(id));
  h.remove(7);
  const std::string cap = std::to_string(h.capacity());
  expect_invalid("id " + cap + " >= capacity " + cap, [&] { h.remove(h.capacity()); });
  expect_invalid("id 60 is not in the index", [&] { h.remove(60); });
  expect_invalid("id 7 is not in the index (removed before)", [&] { h.remove(7); });
  expect_invalid("id 7 was removed", [&] { h.add(7, data.row(7)); });
  // consolidate() frees it: then it may be added again, with any vector.
  EXPECT_EQ(h.consolidate(), 1u);
  EXPECT_FALSE(h.removed(7));
  EXPECT_FALSE(h.contains(7));
  h.add(7, data.row(8));
  EXPECT_TRUE(h.contains(7));
  h.remove(7);
  EXPECT_EQ(h.size(), 49u);
  EXPECT_FALSE(h.contains(7));
  EXPECT_TRUE(h.removed(7));
  EXPECT_FALSE(h.removed(8));
  EXPECT_FALSE(h.removed(60));
  EXPECT_TRUE(h.contains(8));
  ASSERT_NO_THROW(h.check_structure());
  // A filter that allows nothing (or only removed ids) returns nothing; a short filter
  // allows no id past its words.
  HnswSearchState st(h);
  std::vector<Neighbor> got;
  std::vector<uint64_t> none(2, 0);
  h.search(data.query(0), HnswSearchOptions{}, st, &got, HnswFilter{none});
  EXPECT_TRUE(got.empty());
  std::vector<uint64_t> only7(2, 0);
  only7[0] = uint64_t{1} << 7;
  h.search(data.query(0), HnswSearchOptions{}, st, &got, HnswFilter{only7});
  EXPECT_TRUE(got.empty());
  std::vector<uint64_t> first64(1, ~uint64_t{0});
  h.search(data.query(0), HnswSearchOptions{}, st, &got, HnswFilter{first64});
  EXPECT_EQ(got.size(), 10u);
}

// An index of format version 1 (written before tombstones existed) opens and is searched
// as before; its first remove marks it version 2, so that a version-1 reader refuses it
// rather than return removed nodes.
TEST(HnswRemoveFilter, AVersionOneIndexOpensAndItsFirstRemoveMarksItVersionTwo) {
  TempDir dir;
  const testing::Data data = testing::clustered(40, kDim, 5, 5, 3);
  auto version_of = [](BufferPool& pool, SpaceId space) {
    SharedGuard g = pool.pin_shared(PageId(space, 0));
    uint32_t v;
    std::memcpy(&v, g.data() + offsetof(HnswMeta, format_version), 4);
    return v;
  };
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    auto h = BasicHnsw<BufferPool>::create(*pool, "hnsw", params(), 100);
    for (uint32_t id = 0; id < 40; ++id) h.add(id, data.row(id));
    EXPECT_EQ(version_of(*pool, h.space()), HnswMeta::kFormatVersion);
    ExclusiveGuard g = pool->pin_exclusive(PageId(h.space(), 0));
    const uint32_t one = 1;
    std::memcpy(g.data() + offsetof(HnswMeta, format_version), &one, 4);
    g.mark_dirty();
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  auto h = BasicHnsw<BufferPool>::open(*pool, "hnsw");
  EXPECT_EQ(version_of(*pool, h.space()), 1u);
  EXPECT_EQ(h.size(), 40u);
  h.remove(3);
  EXPECT_EQ(version_of(*pool, h.space()), HnswMeta::kFirstTombstoneVersion);
  EXPECT_EQ(h.size(), 39u);
  ASSERT_NO_THROW(h.check_structure());
}

}  // namespace
}  // namespace calico
