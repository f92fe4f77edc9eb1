// BasicCodedHnsw's deletes and filtered search (include/calico/index/coded_hnsw.h, "Deletes
// and filters") against a brute-force model: random interleavings of add, remove,
// consolidate and searches with and without allow-lists on a pool far smaller than the
// index, with check_structure and the model compared after each phase; a search never
// returns a removed or filtered-out id and returns min(k, admissible) results; concurrent
// adds, removes, consolidations and filtered searches; tombstones across a reopen; bad
// input; the index under an id map (BasicMapped): upserts, deletes and label filters.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "calico/index/coded_hnsw.h"
#include "calico/index/mapped_index.h"
#include "support/failure_log.h"
#include "support/filter_model.h"
#include "support/test_util.h"
#include "support/vector_data.h"

namespace calico {
namespace {

using index::BasicCodedHnsw;
using index::CodedHnswParams;
using index::CodedHnswSearchOptions;
using index::CodedHnswSearchState;
using testing::TempDir;
using vector::IdFilter;
using vector::Metric;
using vector::Neighbor;
using Coded = BasicCodedHnsw<BufferPool>;

constexpr uint32_t kDim = 32;
constexpr uint32_t kCapacity = 900;
constexpr uint32_t kK = 10;
constexpr uint32_t kTinyPoolFrames = 24;  // vectors 33 pages, lists 33, codes 1: every step evicts
constexpr uint64_t kSlack = uint64_t{16} << 20;

CodedHnswParams params() {
  CodedHnswParams p;
  p.dim = kDim;
  p.M = 8;
  p.ef_construction = 64;
  return p;
}

uint64_t budget_for(const BufferPool& pool) { return uint64_t{pool.num_frames()} * pool.page_size() + kSlack; }

CodedHnswSearchOptions options(uint32_t ef = 48, uint32_t rerank = 30) {
  CodedHnswSearchOptions o;
  o.k = kK;
  o.ef = ef;
  o.rerank = rerank;
  return o;
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

const testing::Data& data() {
  static const testing::Data d = testing::clustered(kCapacity, kDim, 30, 40, 9);
  return d;
}

// Six phases of 160 random steps (add an unused id 45%, remove a live id 25%, search 30%:
// no filter, or allow-lists of 1%, 10%, 50% of the ids), each phase ending with
// check_structure, size(), contains() and removed() against the model, every other phase
// with a consolidate() (its removed ids then unused, added again later). Every search
// result is checked (expect_admissible); the graph searches' mean recall against the
// model is at least 0.9; a scan re-ranking every allowed row gives exactly the model's
// answer.
TEST(CodedHnswDelete, RandomAddsRemovesAndFilteredSearchesMatchTheModel) {
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
  Coded h = Coded::create(*pool, "v", params(), data().rows.data(), kCapacity, kCapacity, budget_for(*pool));
  Model model(data());
  std::vector<uint8_t> tomb(kCapacity, 0);
  std::mt19937_64 rng(5);
  CodedHnswSearchState st(h);
  std::vector<Neighbor> got;
  double recall_sum = 0;
  uint32_t graph_searches = 0, freed_total = 0;
  for (int phase = 0; phase < 6; ++phase) {
    for (int step = 0; step < 160; ++step) {
      const uint32_t r = static_cast<uint32_t>(rng() % 100);
      if (r < 45) {
        const uint32_t id = static_cast<uint32_t>(rng() % kCapacity);
        if (model.live[id] || tomb[id]) continue;
        h.add(id, data().row(id));
        model.live[id] = 1;
      } else if (r < 70) {
        const uint32_t id = static_cast<uint32_t>(rng() % kCapacity);
        if (!model.live[id]) continue;
        h.remove(id);
        model.live[id] = 0;
        tomb[id] = 1;
      } else {
        const float* q = data().query(static_cast<uint32_t>(rng() % data().num_queries()));
        const double fractions[] = {0, 0.01, 0.1, 0.5};
        const double f = fractions[rng() % 4];
        const std::vector<uint64_t> allow = f == 0 ? std::vector<uint64_t>{} : random_allow_list(rng, f);
        const std::vector<uint64_t>* a = f == 0 ? nullptr : &allow;
        if (a) h.search(q, options(), st, &got, IdFilter{allow});
        else h.search(q, options(), st, &got);
        const std::string what = "phase " + std::to_string(phase) + " step " + std::to_string(step) +
                                 " filter " + std::to_string(f);
        ASSERT_NO_FATAL_FAILURE(expect_admissible(model, q, a, got, what));
        size_t admissible;
        const std::vector<Neighbor> want = model.exact(q, a, &admissible);
        if (admissible >= kK && (f == 0 || f == 0.5)) {
          recall_sum += testing::recall(got, want);
          ++graph_searches;
        }
        // Re-ranking every row the scan finds is exact.
        CodedHnswSearchOptions all = options(48, kCapacity);
        all.exact_scan_below = kCapacity;
        std::vector<Neighbor> exact;
        h.search(q, all, st, &exact, IdFilter{a ? allow : std::vector<uint64_t>((kCapacity + 63) / 64, ~0ull)});
        ASSERT_EQ(exact, want) << what;
      }
    }
    ASSERT_NO_THROW(h.check_structure()) << "phase " << phase;
    ASSERT_EQ(h.size(), model.live_count());
    ASSERT_EQ(h.tombstones(), static_cast<uint32_t>(std::count(tomb.begin(), tomb.end(), 1)));
    for (uint32_t id = 0; id < kCapacity; ++id) {
      ASSERT_EQ(h.contains(id), model.live[id] == 1) << id;
      ASSERT_EQ(h.removed(id), tomb[id] == 1) << id;
    }
    if (phase % 2 == 1) {
      const uint32_t freed = h.consolidate();
      ASSERT_EQ(freed, static_cast<uint32_t>(std::count(tomb.begin(), tomb.end(), 1)));
      freed_total += freed;
      std::fill(tomb.begin(), tomb.end(), 0);
      ASSERT_NO_THROW(h.check_structure()) << "after consolidate, phase " << phase;
      ASSERT_EQ(h.tombstones(), 0u);
    }
  }
  EXPECT_GT(freed_total, 20u);
  ASSERT_GT(graph_searches, 20u);
  const double recall = recall_sum / graph_searches;
  std::printf("coded hnsw delete: %u graph searches, recall@10 %.3f, %u slots freed\n", graph_searches, recall,
              freed_total);
  EXPECT_GE(recall, 0.9);
  EXPECT_GT(st.stats().scans, 0u);
}

// Adds, removes, consolidations, pin_rows() and searches (half with an allow-list) at once
// on a tiny pool: a search never returns an id removed before it began or one its filter
// excludes (nor does one that reads pinned copies of rows a write has since changed),
// every distance is exact, nothing throws (a search that reads a list consolidate()
// rewrote meanwhile skips the slots it freed); the structure and counts hold at the end,
// and recall against the model is at least 0.9.
TEST(CodedHnswDelete, ConcurrentAddsRemovesConsolidationsAndFilteredSearches) {
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(testing::small_options(dir.path(), kTinyPoolFrames)));
  Coded h = Coded::create(*pool, "v", params(), data().rows.data(), kCapacity, 64, budget_for(*pool));
  std::atomic<uint32_t> added{0};
  std::atomic<uint64_t> clock{1};
  std::vector<std::atomic<uint64_t>> removed_at(kCapacity);
  std::atomic<bool> stop{false};
  testing::FailureLog failures;
  auto guarded = [&](const char* who, auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      failures(std::string(who) + " threw: " + e.what());
      stop.store(true);
    }
  };
  std::thread adder([&] {
    guarded("adder", [&] {
      for (uint32_t id = 0; id < kCapacity && !stop.load(); ++id) {
        h.add(id, data().row(id));
        added.store(id + 1, std::memory_order_release);
      }
    });
  });
  std::thread remover([&] {
    guarded("remover", [&] {
      std::mt19937_64 rng(3);
      uint32_t removed = 0;
      while (removed < kCapacity / 3 && !stop.load()) {
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
  });
  std::atomic<uint64_t> pinned_expansions{0};
  auto searcher = [&](uint64_t seed) {
    guarded("searcher", [&] {
      CodedHnswSearchState st(h);
      std::mt19937_64 rng(seed);
      std::vector<Neighbor> got;
      vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
      while (!stop.load()) {
        const float* q = data().query(static_cast<uint32_t>(rng() % data().num_queries()));
        const bool filtered = rng() % 2 == 0;
        const std::vector<uint64_t> allow = random_allow_list(rng, 0.2);
        const uint64_t start = clock.fetch_add(1);
        if (filtered) h.search(q, options(), st, &got, IdFilter{allow});
        else h.search(q, options(), st, &got);
        for (const Neighbor& n : got) {
          const uint64_t r = n.id < kCapacity ? removed_at[n.id].load() : 0;
          if (n.id >= kCapacity) failures("returned id " + std::to_string(n.id) + " past the capacity");
          else if (r != 0 && r < start) failures("returned id " + std::to_string(n.id) + ", removed before the search");
          else if (filtered && !IdFilter{allow}.allows(n.id)) failures("returned filtered-out id " + std::to_string(n.id));
          else if (n.distance != dist(q, data().row(n.id), kDim)) failures("wrong distance for id " + std::to_string(n.id));
        }
      }
      pinned_expansions += st.stats().pinned;
    });
  };
  std::thread s1(searcher, 21), s2(searcher, 22);
  std::atomic<uint32_t> freed{0};
  std::thread consolidator([&] {
    guarded("consolidator", [&] {
      while (!stop.load()) {
        freed += h.consolidate();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  });
  std::atomic<uint32_t> pins{0};
  std::thread pinner([&] {
    guarded("pinner", [&] {
      const uint64_t per_row = index::coded_detail::PinnedRows::bytes_per_row(2 * params().M, kDim);
      while (!stop.load()) {
        if (h.pin_rows(64 * per_row, 16) > 0) ++pins;
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
    });
  });
  adder.join();
  remover.join();
  stop.store(true);
  s1.join();
  s2.join();
  consolidator.join();
  pinner.join();
  ASSERT_EQ(failures.count(), 0u) << failures.first();
  freed += h.consolidate();
  std::printf("coded hnsw delete, concurrent: %u slots freed while searching, rows pinned %u times, %llu expansions "
              "from pinned rows\n", freed.load(), pins.load(), static_cast<unsigned long long>(pinned_expansions.load()));
  EXPECT_GT(freed.load(), 0u);
  EXPECT_GT(pins.load(), 0u);
  EXPECT_GT(pinned_expansions.load(), 0u);
  ASSERT_NO_THROW(h.check_structure());
  Model model(data());
  for (uint32_t id = 0; id < kCapacity; ++id) model.live[id] = removed_at[id].load() == 0;
  EXPECT_EQ(h.size(), model.live_count());
  CodedHnswSearchState st(h);
  std::vector<Neighbor> got;
  double recall_sum = 0;
  for (uint32_t q = 0; q < data().num_queries(); ++q) {
    h.search(data().query(q), options(), st, &got);
    ASSERT_NO_FATAL_FAILURE(expect_admissible(model, data().query(q), nullptr, got, "query " + std::to_string(q)));
    size_t admissible;
    recall_sum += testing::recall(got, model.exact(data().query(q), nullptr, &admissible));
  }
  EXPECT_GE(recall_sum / data().num_queries(), 0.9);
}

// Tombstones persist (the code pages' removed bits): after a flush and a reopen in a new
// pool the removed ids are still removed and never returned; consolidate() there frees
// them, and after another reopen their slots are absent and take new rows.
TEST(CodedHnswDelete, RemovalsSurviveAReopenAndAreFreedThere) {
  TempDir dir;
  const uint32_t n = 600;
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    Coded h = Coded::create(*pool, "v", params(), data().rows.data(), n, n, budget_for(*pool));
    for (uint32_t i = 0; i < n; ++i) h.add(i, data().row(i));
    for (uint32_t i = 0; i < n; i += 3) h.remove(i);
    pool->flush();
  }
  Model model(data());
  for (uint32_t i = 0; i < n; ++i) model.live[i] = i % 3 != 0;
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    Coded h = Coded::open(*pool, "v", budget_for(*pool));
    EXPECT_EQ(h.size(), model.live_count());
    EXPECT_EQ(h.tombstones(), n / 3);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(h.removed(i), i % 3 == 0) << i;
    ASSERT_NO_THROW(h.check_structure());
    CodedHnswSearchState st(h);
    std::vector<Neighbor> got;
    for (uint32_t q = 0; q < data().num_queries(); ++q) {
      h.search(data().query(q), options(), st, &got);
      ASSERT_NO_FATAL_FAILURE(expect_admissible(model, data().query(q), nullptr, got, "after reopen"));
    }
    EXPECT_EQ(h.consolidate(), n / 3);
    ASSERT_NO_THROW(h.check_structure());
    pool->flush();
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  Coded h = Coded::open(*pool, "v", budget_for(*pool));
  EXPECT_EQ(h.tombstones(), 0u);
  EXPECT_EQ(h.size(), model.live_count());
  for (uint32_t i = 0; i < n; i += 3) {
    ASSERT_FALSE(h.contains(i));
    ASSERT_FALSE(h.removed(i));
    h.add(i, data().row(n + i / 3));  // a freed slot takes a new row
  }
  ASSERT_NO_THROW(h.check_structure());
  EXPECT_EQ(h.size(), n);
  CodedHnswSearchState st(h);
  std::vector<Neighbor> got;
  h.search(data().row(n + 1), options(), st, &got);  // the row now in slot 3
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].id, 3u);
  EXPECT_EQ(got[0].distance, 0.0f);
}

TEST(CodedHnswDelete, BadInputLeavesTheIndexUnchanged) {
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
  Coded h = Coded::create(*pool, "v", params(), data().rows.data(), 100, 100, budget_for(*pool));
  for (uint32_t i = 0; i < 50; ++i) h.add(i, data().row(i));
  expect_invalid("capacity", [&] { h.remove(h.capacity()); });
  expect_invalid("not in the index", [&] { h.remove(60); });
  h.remove(7);
  expect_invalid("removed before", [&] { h.remove(7); });
  expect_invalid("tombstone until consolidate", [&] { h.add(7, data().row(7)); });
  EXPECT_EQ(h.size(), 49u);
  EXPECT_EQ(h.tombstones(), 1u);
  ASSERT_NO_THROW(h.check_structure());
  EXPECT_EQ(h.consolidate(), 1u);
  EXPECT_EQ(h.consolidate(), 0u);
  h.add(7, data().row(70));
  EXPECT_EQ(h.size(), 50u);
  ASSERT_NO_THROW(h.check_structure());
  // Removing every node leaves an empty, searchable index that takes rows again.
  for (uint32_t i = 0; i < 50; ++i) h.remove(i);
  EXPECT_EQ(h.size(), 0u);
  CodedHnswSearchState st(h);
  std::vector<Neighbor> got;
  h.search(data().query(0), options(), st, &got);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(h.consolidate(), 50u);
  ASSERT_NO_THROW(h.check_structure());
  h.add(3, data().row(3));
  h.add(4, data().row(4));
  h.search(data().row(4), options(), st, &got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, 4u);
  ASSERT_NO_THROW(h.check_structure());
}

// Under an id map: u64 ids, an upsert replaces the vector, delete, label filters, and
// consolidation through the map (freed slots reused).
TEST(CodedHnswDelete, UnderAnIdMap) {
  using Mapped = index::BasicMapped<Coded>;
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 128));
  Mapped m = Mapped::attach(*pool, "v",
                            Coded::create(*pool, "v", params(), data().rows.data(), 400, 400, budget_for(*pool)));
  std::vector<uint64_t> ids(400);
  std::vector<uint32_t> labels(400);
  for (uint32_t i = 0; i < 400; ++i) {
    ids[i] = uint64_t{1} << 40 | i;
    labels[i] = i % 4;
  }
  m.add(ids, data().rows.data(), 2, index::AddMode::kUpsert, labels);
  EXPECT_EQ(m.size(), 400u);
  // Upsert: id 5 takes row 500's vector.
  m.add(ids[5], data().row(500));
  Mapped::State st(m);
  std::vector<index::MappedNeighbor> got;
  m.search(data().row(500), options(), st, &got);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].id, ids[5]);
  EXPECT_EQ(got[0].distance, 0.0f);
  // Delete and label filters.
  m.remove(std::span<const uint64_t>(ids.data(), 100));
  EXPECT_EQ(m.size(), 300u);
  {  // a filter holds a read section while it lives (consolidate() waits for it)
    const uint32_t two = 2;
    const index::SlotFilter f = m.filter_labels(std::span<const uint32_t>(&two, 1));
    for (uint32_t q = 0; q < 20; ++q) {
      m.search(data().query(q), options(), st, &got, f);
      ASSERT_EQ(got.size(), kK);
      for (const auto& n : got) {
        ASSERT_GE(n.id & 0xffffffffu, 100u);
        ASSERT_EQ((n.id & 0xffffffffu) % 4, 2u);
      }
    }
  }
  EXPECT_EQ(m.consolidate(), 101u);  // 100 deletes and the replaced row of the upsert
  const uint32_t capacity = m.index().capacity();
  m.add(std::span<const uint64_t>(ids.data(), 100), data().rows.data() + size_t{400} * kDim, 1);
  EXPECT_EQ(m.size(), 400u);
  EXPECT_EQ(m.index().capacity(), capacity) << "freed slots are reused";
  EXPECT_EQ(m.check_structure(), 400u);
}

}  // namespace
}  // namespace calico
