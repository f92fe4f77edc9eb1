// BasicCodedHnsw (include/calico/index/coded_hnsw.h): recall@10 against brute force on
// clustered data, searched with pools of several sizes down to one far smaller than the
// vectors (every search re-ranks from evicted pages); reopening after a flush in a new pool
// (same results, codes reloaded); adds and searches from several threads with every result
// checked against the reference vectors and the structure checked at the end; bad
// parameters; code pages whose CRC or header disagree, and codes that disagree with their
// vectors, reported as kCorruptPage and not used.
#include "calico/index/coded_hnsw.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "index/coded_hnsw/coded_hnsw_impl.h"  // coded_detail::pruned_by
#include "io/checksum.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "support/vector_data.h"
#include "vector/distance.h"
#include "vector/data/synthetic.h"

#ifndef CALICO_STRESS_SECONDS
#define CALICO_STRESS_SECONDS 8
#endif

namespace calico {
namespace {

using index::BasicCodedHnsw;
using index::CodedHnswParams;
using index::CodedHnswSearchOptions;
using index::CodedHnswSearchState;
using index::CodedLayout;
using index::CodedPageHeader;
using testing::expect_error;
using testing::small_options;
using testing::TempDir;
using vector::Metric;
using vector::Neighbor;
using Coded = BasicCodedHnsw<BufferPool>;

constexpr uint32_t kDim = 128;
constexpr uint64_t kRows = 3000;
constexpr uint32_t kQueries = 100;
constexpr uint64_t kSlack = uint64_t{16} << 20;  // budget beyond codes + frames (translation)

// SIFT-like rows (the benchmarks' generator, bench/vector/data/synthetic.h: 30 clusters of
// intrinsic dimension 16) and queries from the same distribution.
const testing::Data& data() {
  static const testing::Data d = [] {
    bench::data::ClusteredParams p;
    p.dim = kDim;
    p.clusters = 30;
    p.seed = 7;
    testing::Data out;
    out.dim = kDim;
    out.n = kRows;
    out.rows = bench::data::generate_clustered(p, kRows, bench::data::kBaseStream, 1).values;
    out.queries = bench::data::generate_clustered(p, kQueries, bench::data::kQueryStream, 1).values;
    return out;
  }();
  return d;
}
const std::vector<std::vector<Neighbor>>& truth() {
  static const auto t = testing::reference(data(), Metric::kL2, 10);
  return t;
}

CodedHnswParams params() {
  CodedHnswParams p;
  p.dim = kDim;
  p.M = 16;
  p.ef_construction = 100;
  return p;
}

uint64_t budget_for(const BufferPool& pool) { return uint64_t{pool.num_frames()} * pool.page_size() + kSlack; }

// Builds the index over the first n rows in `pool`.
Coded build(BufferPool& pool, uint64_t n = kRows) {
  Coded idx = Coded::create(pool, "v", params(), data().rows.data(), 1000, 1024, budget_for(pool));
  for (uint64_t i = 0; i < n; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
  return idx;
}

std::vector<std::vector<Neighbor>> search_all(const Coded& idx, const CodedHnswSearchOptions& opt,
                                              CodedHnswSearchState& st) {
  std::vector<std::vector<Neighbor>> got(kQueries);
  for (uint32_t q = 0; q < kQueries; ++q) idx.search(data().query(q), opt, st, &got[q]);
  return got;
}

// Every result is an added row, reported with its exact distance, ascending.
void expect_exact_distances(const std::vector<Neighbor>& got, const float* q, uint64_t rows) {
  const vector::DistanceFn d = vector::distance_kernel(Metric::kL2);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LT(got[i].id, rows);
    EXPECT_FLOAT_EQ(got[i].distance, d(q, data().row(got[i].id), kDim));
    if (i > 0) {
      EXPECT_FALSE(got[i] < got[i - 1]);
    }
  }
}

TEST(CodedHnsw, RecallAtSeveralPoolSizes) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 1024));
    Coded idx = build(*pool);
    // The budget is what the index is given: codes, model and the pool's frames.
    EXPECT_EQ(idx.size(), kRows);
    idx.check_structure();
    pool->flush();
  }
  // The node rows (links and vector) take 3000 / 6 = 500 pages, the codes 21: 1024 frames
  // hold everything, 96 a fifth of it, 16 almost nothing beside the rows being read. Both
  // kinds of beam step (batched, the default, and best-first).
  for (const bool batched : {true, false}) {
    for (uint32_t frames : {1024u, 96u, 16u}) {
      SCOPED_TRACE(batched ? "batched steps" : "best-first steps");
      auto pool = BufferPool::open(small_options(dir.path(), frames));
      Coded idx = Coded::open(*pool, "v", budget_for(*pool));
      ASSERT_EQ(idx.size(), kRows);
      CodedHnswSearchState st(idx);
      CodedHnswSearchOptions opt;  // the defaults
      EXPECT_TRUE(opt.batched);
      opt.batched = batched;
      const PoolStats before = pool->stats();
      const auto got = search_all(idx, opt, st);
      for (uint32_t q = 0; q < kQueries; ++q) expect_exact_distances(got[q], data().query(q), kRows);
      const double recall = testing::mean_recall(got, truth());
      EXPECT_GE(recall, 0.95) << frames << " frames";
      const auto mem = idx.memory();
      EXPECT_EQ(mem.pool_frames, uint64_t{frames} * 4096);
      EXPECT_GE(mem.codes, kRows * idx.code_bytes());
      EXPECT_LE(mem.total(), budget_for(*pool));
      const PoolStats after = pool->stats();
      const uint64_t reads = after.faults + after.prefetch_issued - before.faults - before.prefetch_issued;
      std::printf("coded hnsw, %s: %u frames: recall@10 %.3f, %.1f estimates, %.1f rows expanded, %.2f page reads "
                  "per query\n", batched ? "batched" : "best-first", frames, recall,
                  double(st.stats().estimates) / kQueries, double(st.stats().expanded) / kQueries,
                  double(reads) / kQueries);
      // Every result is an expanded node, ranked by the vector its row holds: no re-rank read.
      EXPECT_EQ(st.stats().reranked, 0u);
      EXPECT_GE(st.stats().expanded, uint64_t{kQueries} * opt.rerank);
      if (frames == 16) {
        EXPECT_GT(reads, 0u) << "a pool this small must read node pages";
      }
    }
  }
}

// pin_rows() on a 16-frame pool: the rows sample searches expanded most are copied, the
// answers stay exactly those of the unpinned index (same rows, same traversal), the copies
// serve expansions and page reads fall; memory() counts them; an add() drops them (and
// searches stay exact), a second pin_rows() brings them back, pin_rows(0) drops them; bytes
// past the budget and sample 0 are refused and change nothing.
TEST(CodedHnsw, PinnedRowsGiveTheSameAnswersWithFewerPageReads) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 1024));
    Coded idx = build(*pool, kRows - 1);
    pool->flush();
  }
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  Coded idx = Coded::open(*pool, "v", budget_for(*pool));
  CodedHnswSearchState st(idx);
  const CodedHnswSearchOptions opt;
  auto reads_of = [&](std::vector<std::vector<Neighbor>>* got) {
    const PoolStats before = pool->stats();
    st.reset_stats();
    *got = search_all(idx, opt, st);
    const PoolStats after = pool->stats();
    return after.faults + after.prefetch_issued - before.faults - before.prefetch_issued;
  };
  std::vector<std::vector<Neighbor>> plain, pinned;
  const uint64_t plain_reads = reads_of(&plain);
  EXPECT_EQ(st.stats().pinned, 0u);
  EXPECT_EQ(idx.pinned_rows(), 0u);
  EXPECT_EQ(idx.memory().pinned_rows, 0u);

  const uint64_t per_row = index::coded_detail::PinnedRows::bytes_per_row(32, kDim);
  const uint32_t rows = idx.pin_rows(300 * per_row, 200);
  EXPECT_GT(rows, 100u);
  EXPECT_LE(rows, 300u);
  EXPECT_EQ(idx.pinned_rows(), rows);
  EXPECT_GE(idx.memory().pinned_rows, uint64_t{rows} * (4 * (1 + 32) + 4 * kDim));
  EXPECT_LE(idx.memory().total(), budget_for(*pool));
  const uint64_t pinned_reads = reads_of(&pinned);
  std::printf("coded hnsw, 16 frames: %.2f page reads per query, %u rows pinned: %.2f (%.1f of %.1f expansions pinned)\n",
              double(plain_reads) / kQueries, rows, double(pinned_reads) / kQueries,
              double(st.stats().pinned) / kQueries, double(st.stats().expanded) / kQueries);
  EXPECT_EQ(pinned, plain);
  EXPECT_GT(st.stats().pinned, 0u);
  EXPECT_LT(pinned_reads, plain_reads);

  // Bad input: refused, nothing changed.
  EXPECT_NE(std::string(expect_error(ErrorCode::kInvalidArgument, [&] { idx.pin_rows(budget_for(*pool)); }).what()).find("bytes"),
            std::string::npos);
  EXPECT_NE(std::string(expect_error(ErrorCode::kInvalidArgument, [&] { idx.pin_rows(per_row, 0); }).what()).find("sample"),
            std::string::npos);
  EXPECT_EQ(idx.pinned_rows(), rows);

  // A write drops the copies; searches read pages again and stay exact.
  idx.add(kRows - 1, data().row(kRows - 1));
  EXPECT_EQ(idx.pinned_rows(), 0u);
  std::vector<std::vector<Neighbor>> after_add;
  reads_of(&after_add);
  EXPECT_EQ(st.stats().pinned, 0u);
  for (uint32_t q = 0; q < kQueries; ++q) expect_exact_distances(after_add[q], data().query(q), kRows);
  EXPECT_GE(testing::mean_recall(after_add, truth()), 0.95);
  EXPECT_GT(idx.pin_rows(300 * per_row, 200), 100u);
  reads_of(&after_add);
  EXPECT_GT(st.stats().pinned, 0u);
  EXPECT_EQ(idx.pin_rows(0), 0u);
  EXPECT_EQ(idx.pinned_rows(), 0u);
  EXPECT_EQ(idx.memory().pinned_rows, 0u);
}

// Automatic entries (CodedHnswSearchOptions::entries 0) score the whole entry sample, exactly
// as entries = "all" does, whether pages are being read (16 frames) or everything is resident
// and the prefetch has gone idle (1024 frames): recall must not depend on the pool's state. (It
// did: in memory a search scored 64 entries, and at 1M clustered rows recall fell to 0.38.)
TEST(CodedHnsw, AutomaticEntriesScoreTheWholeSampleWhetherOrNotPagesAreRead) {
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 1024));
    CodedHnswParams p = params();
    p.entry_rate = 8;  // a sample of about 375 entries
    Coded idx = Coded::create(*pool, "v", p, data().rows.data(), 1000, 1024, budget_for(*pool));
    for (uint64_t i = 0; i < kRows; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
    pool->flush();
  }
  CodedHnswSearchOptions automatic, all;
  all.entries = 1u << 30;
  for (uint32_t frames : {16u, 1024u}) {
    SCOPED_TRACE(frames);
    auto pool = BufferPool::open(small_options(dir.path(), frames));
    Coded idx = Coded::open(*pool, "v", budget_for(*pool));
    CodedHnswSearchState st(idx);
    search_all(idx, automatic, st);  // with 1024 frames: loads every page, then goes idle
    st.reset_stats();
    const auto got_all = search_all(idx, all, st);
    const uint64_t estimates_all = st.stats().estimates;
    st.reset_stats();
    const auto got_auto = search_all(idx, automatic, st);
    const uint64_t estimates_auto = st.stats().estimates;
    EXPECT_EQ(got_auto, got_all);
    // The same entries scored; the traversals may differ by a few estimates once resident,
    // where the adaptive prefetch's state (carried from search to search) shapes the steps.
    EXPECT_GE(estimates_auto * 100, estimates_all * 99);
    EXPECT_GE(estimates_auto, uint64_t{kQueries} * 300);  // the sample, scored per query
    EXPECT_GE(testing::mean_recall(got_auto, truth()), 0.95);
  }
}

// The same index on every evicting translation: built with room, then searched with 16
// frames (the 600 rows' vectors take 86 pages), every result exact and recall as above.
template <class Pool>
class CodedHnswOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(CodedHnswOnEveryTranslation, testing::IndexPools, testing::PoolName);

TYPED_TEST(CodedHnswOnEveryTranslation, SearchesWithATinyPool) {
  using Index = BasicCodedHnsw<TypeParam>;
  constexpr uint32_t kN = 600;
  const testing::Data& d = data();
  testing::Data part = d;
  part.n = kN;
  part.rows.resize(size_t{kN} * kDim);
  const auto want = testing::reference(part, Metric::kL2, 10);
  TempDir dir;
  auto budget = [](const TypeParam& pool) { return uint64_t{pool.num_frames()} * pool.page_size() + kSlack; };
  {
    auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), 256));
    Index idx = Index::create(*pool, "v", params(), d.rows.data(), kN, kN, budget(*pool));
    for (uint32_t i = 0; i < kN; ++i) idx.add(i, d.row(i));
    idx.check_structure();
    pool->flush();
  }
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), 16));
  Index idx = Index::open(*pool, "v", budget(*pool));
  CodedHnswSearchState st(idx);
  std::vector<std::vector<Neighbor>> got(kQueries);
  for (uint32_t q = 0; q < kQueries; ++q) {
    idx.search(d.query(q), {}, st, &got[q]);
    expect_exact_distances(got[q], d.query(q), kN);
  }
  EXPECT_GE(testing::mean_recall(got, want), 0.95);
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "16 frames must evict";
  idx.check_structure();
}

// Isotropic Gaussian clusters (every direction of a cluster spread alike: far harder for
// codes than real data) rank neighbours worse on 1-bit codes; a wider beam, which expands
// (and so scores exactly) more nodes, recovers them.
TEST(CodedHnsw, HardDataNeedsAWiderBeam) {
  const testing::Data d = testing::clustered(2000, 64, 20, 50, 7);
  const auto want = testing::reference(d, Metric::kL2, 10);
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 512));
  CodedHnswParams p = params();
  p.dim = 64;
  Coded idx = Coded::create(*pool, "v", p, d.rows.data(), 1000, 2000, budget_for(*pool));
  for (uint32_t i = 0; i < 2000; ++i) idx.add(i, d.row(i));
  CodedHnswSearchState st(idx);
  double last = 0;
  double first = 0;
  for (uint32_t ef : {10u, 50u, 200u}) {
    CodedHnswSearchOptions opt;
    opt.ef = ef;
    opt.rerank = 10;
    std::vector<std::vector<Neighbor>> got(d.num_queries());
    for (uint32_t q = 0; q < d.num_queries(); ++q) idx.search(d.query(q), opt, st, &got[q]);
    const double recall = testing::mean_recall(got, want);
    std::printf("coded hnsw, isotropic clusters: ef %u: recall@10 %.3f\n", ef, recall);
    EXPECT_GE(recall, last - 0.005);  // a wider beam from the same starts: about monotone
    if (ef == 10) first = recall;
    last = recall;
  }
  EXPECT_GE(last, 0.95);
  EXPECT_GT(last, first + 0.05) << "the narrow beam should miss neighbours on this data";
}

TEST(CodedHnsw, ReopenAfterFlush) {
  TempDir dir;
  std::vector<std::vector<Neighbor>> before;
  CodedHnswSearchOptions opt;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 512));
    Coded idx = build(*pool, 2000);
    CodedHnswSearchState st(idx);
    before = search_all(idx, opt, st);
    pool->flush();
  }
  auto pool = BufferPool::open(small_options(dir.path(), 512));
  Coded idx = Coded::open(*pool, "v", budget_for(*pool));
  EXPECT_EQ(idx.size(), 2000u);
  EXPECT_GE(idx.capacity(), 2000u);
  idx.check_structure();
  CodedHnswSearchState st(idx);
  EXPECT_EQ(search_all(idx, opt, st), before);
  // The reopened index takes more rows; the new ones are found.
  for (uint64_t i = 2000; i < kRows; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
  idx.check_structure();
  EXPECT_GE(testing::mean_recall(search_all(idx, opt, st), truth()), 0.95);
  expect_error(ErrorCode::kInvalidArgument, [&] { idx.add(5, data().row(5)); });
}

// PQ codes (CodedHnswParams::pq_bytes) in place of RaBitQ: recall against brute force in a
// pool that holds everything and in one of 16 frames, the same answers after a reopen (the
// model blob says PQ; params() report it), and parameters PQ cannot take refused.
TEST(CodedHnsw, PqCodesRecallAndReopen) {
  TempDir dir;
  CodedHnswParams p = params();
  p.pq_bytes = 16;  // 8 dimensions a byte
  std::vector<std::vector<Neighbor>> before;
  CodedHnswSearchOptions opt;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 1024));
    Coded idx = Coded::create(*pool, "v", p, data().rows.data(), 1000, 1024, budget_for(*pool));
    for (uint64_t i = 0; i < kRows; ++i) idx.add(static_cast<uint32_t>(i), data().row(i));
    EXPECT_EQ(idx.code_bytes(), 16u);
    EXPECT_EQ(idx.params().pq_bytes, 16u);
    idx.check_structure();
    CodedHnswSearchState st(idx);
    before = search_all(idx, opt, st);
    EXPECT_GE(testing::mean_recall(before, truth()), 0.95);
    for (uint32_t q = 0; q < kQueries; ++q) expect_exact_distances(before[q], data().query(q), kRows);
    pool->flush();
  }
  for (uint32_t frames : {1024u, 16u}) {
    auto pool = BufferPool::open(small_options(dir.path(), frames));
    Coded idx = Coded::open(*pool, "v", budget_for(*pool));
    EXPECT_EQ(idx.params().pq_bytes, 16u);
    EXPECT_EQ(idx.params().bits, 0u);
    EXPECT_EQ(idx.code_bytes(), 16u);
    idx.check_structure();
    CodedHnswSearchState st(idx);
    EXPECT_EQ(search_all(idx, opt, st), before) << frames << " frames";
  }
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  for (uint32_t bad : {129u, 256u}) {  // more bytes than the 128 dimensions
    p.pq_bytes = bad;
    const Error e = expect_error(ErrorCode::kInvalidArgument, [&] {
      Coded::create(*pool, "bad", p, data().rows.data(), 1000, 100, budget_for(*pool));
    });
    EXPECT_NE(std::string(e.what()).find("pq_bytes"), std::string::npos) << e.what();
  }
  p.pq_bytes = 16;
  const Error e = expect_error(ErrorCode::kInvalidArgument, [&] {
    Coded::create(*pool, "bad", p, data().rows.data(), 255, 100, budget_for(*pool));
  });
  EXPECT_NE(std::string(e.what()).find("sample"), std::string::npos) << e.what();
  for (const SpaceInfo& info : pool->spaces()) EXPECT_EQ(info.name.rfind("bad", 0), std::string::npos) << info.name;
  // 29 bytes do not divide the 128 dimensions: subspaces of 5 (the first 12) and 4.
  p.pq_bytes = 29;
  Coded odd = Coded::create(*pool, "odd", p, data().rows.data(), 1000, 1024, budget_for(*pool));
  for (uint64_t i = 0; i < kRows; ++i) odd.add(static_cast<uint32_t>(i), data().row(i));
  EXPECT_EQ(odd.code_bytes(), 29u);
  odd.check_structure();
  CodedHnswSearchState st(odd);
  EXPECT_GE(testing::mean_recall(search_all(odd, opt, st), truth()), 0.95);
}

TEST(CodedHnsw, ConcurrentAddsAndSearches) {
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(small_options(dir.path(), 96)));
  Coded idx = Coded::create(*pool, "v", params(), data().rows.data(), 1000, 64, budget_for(*pool));
  constexpr uint32_t kAdders = 2, kSearchers = 2;
  std::atomic<uint32_t> next{0};
  std::atomic<uint64_t> searches{0};
  std::atomic<bool> stop{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(CALICO_STRESS_SECONDS);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kAdders; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = next++; i < kRows && std::chrono::steady_clock::now() < deadline; i = next++) {
        idx.add(i, data().row(i));
      }
    });
  }
  for (uint32_t t = 0; t < kSearchers; ++t) {
    threads.emplace_back([&, t] {
      CodedHnswSearchState st(idx);
      std::vector<Neighbor> got;
      CodedHnswSearchOptions opt;
      opt.ef = 40;
      opt.rerank = 20;
      for (uint32_t q = t; !stop.load(); q = (q + 1) % kQueries) {
        idx.search(data().query(q), opt, st, &got);
        expect_exact_distances(got, data().query(q), kRows);
        for (const Neighbor& n : got) ASSERT_TRUE(idx.contains(n.id));
        ++searches;
      }
    });
  }
  for (uint32_t t = 0; t < kAdders; ++t) threads[t].join();
  stop = true;
  for (uint32_t t = kAdders; t < threads.size(); ++t) threads[t].join();
  // Each adder took one id past the last it added (the loop's exit): ids [0, added) were
  // added, in order of claim.
  const uint32_t added = std::min<uint32_t>(next.load() - kAdders, kRows);
  std::printf("coded hnsw: %u adds and %llu searches in flight together\n", added,
              static_cast<unsigned long long>(searches.load()));
  EXPECT_GT(searches.load(), 0u);
  EXPECT_EQ(idx.size(), added);
  idx.check_structure();
  for (uint32_t i = 0; i < idx.capacity(); ++i) EXPECT_EQ(idx.contains(i), i < added) << i;
  // Every added row is found by a search for itself once the adds are over.
  CodedHnswSearchState st(idx);
  std::vector<Neighbor> got;
  uint32_t found = 0;
  for (uint32_t i = 0; i < added; i += 7) {
    idx.search(data().row(i), {}, st, &got);
    found += !got.empty() && got[0].distance == 0.0f;
  }
  EXPECT_GE(found, (added + 6) / 7 * 95 / 100);
}

// Vamana's alpha on cosine data prunes exactly as on squared L2 of the same unit vectors
// (cosine distances, 1 - cos, are half of it), for every alpha: the links heuristic treats a
// cosine index as the L2 index of its normalised rows. Pairs within rounding of the
// boundary are skipped.
TEST(CodedHnsw, AlphaPrunesCosineAsL2OnUnitVectors) {
  std::mt19937_64 rng(17);
  std::normal_distribution<float> g;
  constexpr uint32_t kD = 16;
  const vector::DistanceFn l2 = vector::distance_kernel(Metric::kL2);
  const vector::DistanceFn ip = vector::distance_kernel(Metric::kInnerProduct);
  uint32_t compared = 0, pruned = 0;
  for (int i = 0; i < 2000; ++i) {
    float base[kD], kept[kD], cand[kD];
    for (float* v : {base, kept, cand}) {
      for (uint32_t d = 0; d < kD; ++d) v[d] = g(rng);
      ASSERT_TRUE(vector::normalize(v, kD));
    }
    for (float alpha : {1.0f, 1.2f, 1.5f}) {
      const float l2_kept = l2(kept, cand, kD), l2_base = l2(base, cand, kD);
      if (std::abs(alpha * l2_kept - l2_base) < 1e-3f) continue;
      const bool by_l2 = index::coded_detail::pruned_by(Metric::kL2, alpha, l2_kept, l2_base);
      EXPECT_EQ(index::coded_detail::pruned_by(Metric::kCosine, alpha, ip(kept, cand, kD), ip(base, cand, kD)), by_l2)
          << "alpha " << alpha << ", squared L2 " << l2_kept << " / " << l2_base;
      ++compared;
      pruned += by_l2 ? 1 : 0;
    }
  }
  EXPECT_GT(compared, 5000u);
  EXPECT_GT(pruned, 1000u);
  EXPECT_LT(pruned, compared - 1000u);
}

TEST(CodedHnsw, BadParameters) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  const float* s = data().rows.data();
  const uint64_t budget = budget_for(*pool);
  auto create_error = [&](CodedHnswParams p, uint32_t capacity, uint64_t b, const char* names) {
    const Error e = expect_error(ErrorCode::kInvalidArgument, [&] { Coded::create(*pool, "bad", p, s, 1000, capacity, b); });
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  };
  CodedHnswParams p = params();
  p.dim = 0;
  create_error(p, 100, budget, "dim");
  p = params();
  p.bits = 3;
  create_error(p, 100, budget, "bits");
  p = params();
  p.M = 1;
  create_error(p, 100, budget, "M");
  create_error(params(), 0, budget, "capacity");
  p = params();
  p.entry_rate = 0;
  create_error(p, 100, budget, "entry_rate");
  for (float alpha : {0.5f, 2.5f, std::nanf("")}) {
    p = params();
    p.alpha = alpha;
    create_error(p, 100, budget, "alpha");
  }
  // A budget below the codes of the capacity: 100000 slots x (43 + 1) bytes > 1 MB; with
  // codes of more than 1 bit the error names the smaller codes as a way out.
  create_error(params(), 100000, 1 << 20, "budget_bytes");
  create_error(params(), 100000, 1 << 20, "bits 1");
  // A budget that holds the codes but not the pool's frames as well.
  create_error(params(), 100, 64 * 4096 - 1, "budget_bytes");
  EXPECT_TRUE(pool->spaces().empty()) << "a refused create leaves no space behind";

  Coded idx = Coded::create(*pool, "v", params(), s, 1000, 100, budget);
  CodedHnswSearchState st(idx);
  std::vector<Neighbor> out(3);
  idx.search(data().query(0), {}, st, &out);
  EXPECT_TRUE(out.empty()) << "an empty index has no neighbours";
  for (uint32_t i = 0; i < 50; ++i) idx.add(i, data().row(i));
  CodedHnswSearchOptions opt;
  opt.rerank = 0;
  Error e = expect_error(ErrorCode::kInvalidArgument, [&] { idx.search(data().query(0), opt, st, &out); });
  EXPECT_NE(std::string(e.what()).find("rerank"), std::string::npos) << e.what();
  opt = {};
  opt.k = 0;
  e = expect_error(ErrorCode::kInvalidArgument, [&] { idx.search(data().query(0), opt, st, &out); });
  EXPECT_NE(std::string(e.what()).find("k is 0"), std::string::npos) << e.what();
  std::vector<float> nan(kDim, 0.0f);
  nan[3] = std::numeric_limits<float>::quiet_NaN();
  expect_error(ErrorCode::kInvalidArgument, [&] { idx.search(nan.data(), {}, st, &out); });
  expect_error(ErrorCode::kInvalidArgument, [&] { idx.add(60, nan.data()); });
  expect_error(ErrorCode::kInvalidArgument, [&] { idx.add(7, data().row(7)); });  // added before
  EXPECT_FALSE(idx.contains(60)) << "a refused add leaves its slot free";
  // Growth past the budget: the codes of 2^26 slots do not fit a 17 MB budget.
  e = expect_error(ErrorCode::kInvalidArgument, [&] { idx.add(1u << 26, data().row(0)); });
  EXPECT_NE(std::string(e.what()).find("budget_bytes"), std::string::npos) << e.what();
  e = expect_error(ErrorCode::kInvalidArgument, [&] { Coded::open(*pool, "v", 1000); });
  EXPECT_NE(std::string(e.what()).find("budget_bytes"), std::string::npos) << e.what();
  expect_error(ErrorCode::kUnknownSpace, [&] { Coded::open(*pool, "none", budget); });
  // A state of another index.
  Coded other = Coded::create(*pool, "w", params(), s, 1000, 100, budget);
  CodedHnswSearchState wrong(other);
  expect_error(ErrorCode::kInvalidArgument, [&] { idx.search(data().query(0), {}, wrong, &out); });
  idx.check_structure();
}

// Builds 600 rows in dir and flushes; returns the layout.
CodedLayout build_small(const std::string& dir) {
  auto pool = BufferPool::open(small_options(dir, 256));
  Coded idx = build(*pool, 600);
  pool->flush();
  return idx.layout();
}

// Rewrites block `block` of `space` through fn(page) and flushes (the pool stamps a valid
// checksum: the damage is in the format, not the bytes on disk).
template <class Fn>
void edit_page(const std::string& dir, const std::string& space, uint32_t block, Fn&& fn) {
  auto pool = BufferPool::open(small_options(dir, 256));
  ExclusiveGuard g = pool->pin_exclusive(PageId(pool->open_space(space), block));
  fn(g.data());
  g.mark_dirty();
  g.release();
  pool->flush();
}

TEST(CodedHnsw, CodePageWithBadCrcIsReported) {
  TempDir dir;
  const CodedLayout l = build_small(dir.path());
  const uint32_t block = l.code_block(10);
  edit_page(dir.path(), "v.codes", block, [&](std::byte* p) { p[l.code_offset(10)] ^= std::byte{0x5a}; });
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  const Error e = expect_error(ErrorCode::kCorruptPage, [&] { Coded::open(*pool, "v", budget_for(*pool)); });
  EXPECT_EQ(e.page(), PageId(pool->open_space("v.codes"), block));
  EXPECT_NE(std::string(e.what()).find("CRC"), std::string::npos) << e.what();
}

TEST(CodedHnsw, CodePageOfAnotherIndexIsReported) {
  TempDir dir;
  const CodedLayout l = build_small(dir.path());
  const uint32_t block = l.code_block(0);
  edit_page(dir.path(), "v.codes", block, [&](std::byte* p) {
    CodedPageHeader h;
    std::memcpy(&h, p, sizeof h);
    h.uuid ^= 1;
    std::memcpy(p, &h, sizeof h);
  });
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  const Error e = expect_error(ErrorCode::kCorruptPage, [&] { Coded::open(*pool, "v", budget_for(*pool)); });
  EXPECT_EQ(e.page(), PageId(pool->open_space("v.codes"), block));
}

// An index of an earlier format (links and vectors in separate spaces) is refused by open()
// with a message to build it again, naming its metadata page.
TEST(CodedHnsw, EarlierFormatIsRefusedByOpen) {
  TempDir dir;
  build_small(dir.path());
  edit_page(dir.path(), "v.codes", 0, [&](std::byte* p) {
    CodedPageHeader h;
    std::memcpy(&h, p, sizeof h);
    h.format = 2;
    std::memcpy(p, &h, sizeof h);
  });
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  const Error e = expect_error(ErrorCode::kCorruptPage, [&] { Coded::open(*pool, "v", budget_for(*pool)); });
  EXPECT_EQ(e.page(), PageId(pool->open_space("v.codes"), 0));
  EXPECT_NE(std::string(e.what()).find("build it again"), std::string::npos) << e.what();
}

// A code rewritten with its page's CRC fixed up passes open(), but disagrees with its node
// row's record of it: the search that reads the row reports the node page.
TEST(CodedHnsw, CodeThatDisagreesWithItsVectorIsReported) {
  TempDir dir;
  const CodedLayout l = build_small(dir.path());
  constexpr uint32_t kSlot = 42;
  edit_page(dir.path(), "v.codes", l.code_block(kSlot), [&](std::byte* p) {
    p[l.code_offset(kSlot)] ^= std::byte{0x01};
    CodedPageHeader h;
    std::memcpy(&h, p, sizeof h);
    h.crc = io::crc32c(p + CodedLayout::kHeader, l.code_payload_bytes());
    std::memcpy(p, &h, sizeof h);
  });
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  Coded idx = Coded::open(*pool, "v", budget_for(*pool));
  CodedHnswSearchState st(idx);
  std::vector<Neighbor> out;
  const Error e = expect_error(ErrorCode::kCorruptPage, [&] { idx.search(data().row(kSlot), {}, st, &out); });
  EXPECT_EQ(e.page(), PageId(pool->open_space("v.graph"), l.node_block(kSlot)));
  EXPECT_NE(std::string(e.what()).find("disagrees with its code"), std::string::npos) << e.what();
}

// A link row whose count breaks the format (more than 2M) is reported naming its page when a
// search reads it, and its ids are not followed.
TEST(CodedHnsw, LinkRowThatBreaksTheFormatIsReported) {
  TempDir dir;
  const CodedLayout l = build_small(dir.path());
  constexpr uint32_t kSlot = 42;
  edit_page(dir.path(), "v.graph", l.node_block(kSlot), [&](std::byte* p) {
    const uint16_t count = 0xffff;
    std::memcpy(p + l.node_offset(kSlot), &count, 2);
  });
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  Coded idx = Coded::open(*pool, "v", budget_for(*pool));
  CodedHnswSearchState st(idx);
  std::vector<Neighbor> out;
  const Error e = expect_error(ErrorCode::kCorruptPage, [&] { idx.search(data().row(kSlot), {}, st, &out); });
  EXPECT_EQ(e.page(), PageId(pool->open_space("v.graph"), l.node_block(kSlot)));
  EXPECT_THROW(idx.check_structure(), std::logic_error);
}

}  // namespace
}  // namespace calico
