// The coded HNSW's entry cells (src/index/coded_hnsw/entry_cells.h): a sample of 4,096
// entries or more is partitioned around leaders, and a search scores the entries of the
// nearest cells only. Checked: the same recall as scoring the whole sample for a fraction of
// its estimates, built during adds and again at open(); removals and consolidate() keep the
// cells in step with the sample (check_structure); adds that build the cells while searches
// run (every result exact and added).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "calico/index/coded_hnsw.h"
#include "support/failure_log.h"
#include "support/test_util.h"
#include "support/vector_data.h"
#include "vector/distance.h"

namespace calico {
namespace {

using index::BasicCodedHnsw;
using index::CodedHnswParams;
using index::CodedHnswSearchOptions;
using index::CodedHnswSearchState;
using testing::small_options;
using testing::TempDir;
using vector::Metric;
using vector::Neighbor;
using Coded = BasicCodedHnsw<BufferPool>;

constexpr uint32_t kDim = 32;
constexpr uint64_t kRows = 6000;  // with entry_rate 1 every node is an entry: past EntryCells::kMinEntries
constexpr uint32_t kQueries = 100;
constexpr uint64_t kBudget = uint64_t{64} << 20;

const testing::Data& data() {
  static const testing::Data d = testing::clustered(kRows, kDim, 60, kQueries, 17);
  return d;
}

CodedHnswParams params() {
  CodedHnswParams p;
  p.dim = kDim;
  p.M = 12;
  p.ef_construction = 64;
  p.entry_rate = 1;
  return p;
}

Coded create(BufferPool& pool) { return Coded::create(pool, "v", params(), data().rows.data(), 2000, 1024, kBudget); }

struct Searched {
  std::vector<std::vector<Neighbor>> got;
  double estimates_per_query = 0;
};

Searched search_all(const Coded& idx, uint32_t entries) {
  CodedHnswSearchState st(idx);
  CodedHnswSearchOptions opt;
  opt.ef = 64;
  opt.entries = entries;
  Searched r;
  r.got.resize(kQueries);
  for (uint32_t q = 0; q < kQueries; ++q) idx.search(data().query(q), opt, st, &r.got[q]);
  r.estimates_per_query = double(st.stats().estimates) / kQueries;
  return r;
}

// Automatic entries on a partitioned sample score about a quarter of it (the whole sample
// is 6,000 estimates a query before the beam's own) at the recall of the whole sample.
void expect_cells_pay(const Coded& idx, const std::string& what) {
  SCOPED_TRACE(what);
  const auto want = testing::reference(data(), Metric::kL2, 10);
  const Searched all = search_all(idx, 1u << 30);
  const Searched automatic = search_all(idx, 0);
  const Searched thousand = search_all(idx, 1000);
  EXPECT_GE(all.estimates_per_query, double(kRows));
  EXPECT_LT(automatic.estimates_per_query, all.estimates_per_query / 2) << "the cells are not used";
  EXPECT_GE(thousand.estimates_per_query, 1000.0);  // the cells nearest the query hold at least 1,000
  EXPECT_LT(thousand.estimates_per_query, all.estimates_per_query);
  const double r_all = testing::mean_recall(all.got, want), r_auto = testing::mean_recall(automatic.got, want);
  std::printf("coded hnsw cells, %s: all %.0f estimates a query, recall %.3f; automatic %.0f, %.3f; 1000: %.0f\n",
              what.c_str(), all.estimates_per_query, r_all, automatic.estimates_per_query, r_auto,
              thousand.estimates_per_query);
  EXPECT_GE(r_all, 0.9);
  EXPECT_GE(r_auto, r_all - 0.02);
}

TEST(CodedHnswCells, TheNearestCellsGiveTheWholeSamplesRecallForAFractionOfTheEstimates) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 2048));
    Coded idx = create(*pool);
    const uint64_t before = idx.memory().codes;
    for (uint64_t i = 0; i < kRows; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
    ASSERT_NO_THROW(idx.check_structure());
    EXPECT_GT(idx.memory().codes, before);
    expect_cells_pay(idx, "built by the adds");
    pool->flush();
  }
  auto pool = BufferPool::open(small_options(dir.path(), 2048));
  Coded idx = Coded::open(*pool, "v", kBudget);
  ASSERT_NO_THROW(idx.check_structure());
  expect_cells_pay(idx, "built again by open()");
}

// A third of the nodes removed and consolidated: the cells drop their entries with the
// sample (check_structure compares them), searches return only live nodes, and their recall
// against the live rows holds.
TEST(CodedHnswCells, ConsolidateKeepsTheCellsInStepWithTheSample) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 2048));
  Coded idx = create(*pool);
  for (uint64_t i = 0; i < kRows; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
  for (uint32_t i = 0; i < kRows; i += 3) idx.remove(i);
  ASSERT_NO_THROW(idx.check_structure());
  EXPECT_GT(idx.consolidate(), 0u);
  ASSERT_NO_THROW(idx.check_structure());
  testing::Data live;
  live.dim = kDim;
  live.queries = data().queries;
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < kRows; ++i) {
    if (i % 3 == 0) continue;
    ids.push_back(i);
    live.rows.insert(live.rows.end(), data().row(i), data().row(i) + kDim);
  }
  live.n = ids.size();
  auto want = testing::reference(live, Metric::kL2, 10);
  for (auto& w : want) {
    for (Neighbor& n : w) n.id = ids[n.id];
  }
  const Searched r = search_all(idx, 0);
  for (const auto& got : r.got) {
    for (const Neighbor& n : got) ASSERT_NE(n.id % 3, 0u) << "returned removed node " << n.id;
  }
  EXPECT_GE(testing::mean_recall(r.got, want), 0.88);
  EXPECT_LT(r.estimates_per_query, double(live.n) / 2);
}

// Two adders cross EntryCells::kMinEntries (the cells are built by one of them, under the
// sample's lock, while the other adds) as two threads search: every result is an added node
// at its exact distance. At the end the structure holds and the cells are used.
TEST(CodedHnswCells, AddsBuildTheCellsWhileSearchesRun) {
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(small_options(dir.path(), 2048)));
  Coded idx = create(*pool);
  std::atomic<uint32_t> next{0};
  std::atomic<uint32_t> adders_left{2};
  std::vector<std::atomic<uint8_t>> started(kRows);
  for (auto& s : started) s.store(0);
  testing::FailureLog failures;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = next++; i < kRows; i = next++) {
        started[i].store(1, std::memory_order_release);
        idx.add(i, data().row(i));
      }
      adders_left.fetch_sub(1);
    });
  }
  const vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
  for (uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      CodedHnswSearchState st(idx);
      std::vector<Neighbor> out;
      CodedHnswSearchOptions opt;
      opt.ef = 24;
      for (uint32_t q = t; adders_left.load() > 0 && failures.count() == 0; q = (q + 1) % kQueries) {
        idx.search(data().query(q), opt, st, &out);
        for (const Neighbor& n : out) {
          if (n.id >= kRows || started[n.id].load(std::memory_order_acquire) == 0) {
            failures("returned node " + std::to_string(n.id) + ", never added");
          } else if (n.distance != dist(data().query(q), data().row(n.id), kDim)) {
            failures("node " + std::to_string(n.id) + " at a wrong distance");
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.count(), 0u) << failures.first();
  EXPECT_EQ(idx.size(), kRows);
  ASSERT_NO_THROW(idx.check_structure());
  expect_cells_pay(idx, "built while searches ran");
}

}  // namespace
}  // namespace calico
