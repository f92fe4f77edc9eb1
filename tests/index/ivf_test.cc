// IVF-Flat: searches against brute-force top-k on a seeded clustered data set, on every
// evicting translation with a tiny pool (48 frames: build and search evict): nprobe = nlist
// is exact, a small nprobe keeps recall@10 >= 0.9; optimistic / pinned reads and prefetch
// on / off give identical results; every row sits in its nearest centroid's list; four
// searching threads with a concurrent add(); persistence across a pool reopen; metrics ip
// and cosine; repeated rows (empty lists); progress; bad input.
#include "calico/index/ivf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "support/test_util.h"
#include "support/vector_data.h"
#include "support/variants.h"
#include "vector/kmeans.h"

namespace calico {
namespace {

using index::BasicIvf;
using index::IvfParams;
using index::IvfSearchOptions;
using index::IvfSearchState;
using testing::expect_error;
using testing::small_options;
using testing::TempDir;
using testing::Data;
using testing::clustered;
using testing::reference;
using testing::recall;
using vector::Metric;
using vector::Neighbor;

constexpr uint32_t kFrames = 48;
constexpr uint32_t kK = 10;

IvfParams params_for(const Data& d, uint32_t nlist, Metric metric = Metric::kL2) {
  IvfParams p;
  p.dim = d.dim;
  p.metric = metric;
  p.nlist = nlist;
  p.train_iters = 8;
  p.seed = 5;
  p.threads = 2;
  return p;
}

// Every query with `opt` against `want` exactly.
template <class Pool>
void expect_exact(const BasicIvf<Pool>& ivf, const Data& d, const std::vector<std::vector<Neighbor>>& want,
                  IvfSearchOptions opt) {
  IvfSearchState st(ivf);
  std::vector<Neighbor> got;
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    ivf.search(d.query(q), opt, st, &got);
    ASSERT_EQ(got, want[q]) << "query " << q << " nprobe " << opt.nprobe << " optimistic " << opt.optimistic
                            << " prefetch " << opt.prefetch;
  }
}

// Every row is stored once, in the list of its nearest centroid (ties: the lower list).
template <class Pool>
void expect_rows_in_nearest_list(const BasicIvf<Pool>& ivf, const Data& d) {
  const vector::DistanceFn fn = vector::distance_kernel(ivf.metric());
  std::vector<uint32_t> seen(d.n, 0), ids;
  std::vector<float> v(d.dim);
  for (uint32_t l = 0; l < ivf.nlist(); ++l) {
    ivf.list_ids(l, &ids);
    ASSERT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "build writes a list in row order";
    for (uint32_t id : ids) {
      ASSERT_LT(id, d.n);
      ++seen[id];
      v.assign(d.row(id), d.row(id) + d.dim);
      if (ivf.metric() == Metric::kCosine) vector::normalize(v.data(), d.dim);
      ASSERT_EQ(vector::nearest_centroid(v.data(), ivf.centroid(0), ivf.nlist(), d.dim, fn), l) << "row " << id;
    }
  }
  for (uint64_t i = 0; i < d.n; ++i) ASSERT_EQ(seen[i], 1u) << "row " << i;
}

template <class Pool>
class IvfOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(IvfOnEveryTranslation, testing::IndexPools, testing::PoolName);

// nprobe = nlist: exact, in every read mode; nprobe = 4 of 32: recall@10 >= 0.9 and the
// same results in every read mode; above nlist: clamped (exact).
TYPED_TEST(IvfOnEveryTranslation, ExactWithEveryListAndHighRecallWithFew) {
  const Data d = clustered(3000, 24, 40, 30, 1);
  const auto want = reference(d, Metric::kL2, kK);
  TempDir dir;
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
  auto ivf = BasicIvf<TypeParam>::build(*pool, "ivf", params_for(d, 32), d.rows.data(), d.n);
  ASSERT_EQ(ivf.size(), d.n);
  ASSERT_EQ(ivf.verify(), d.n);
  expect_rows_in_nearest_list(ivf, d);
  for (bool optimistic : {true, false}) {
    for (bool prefetch : {true, false}) {
      expect_exact(ivf, d, want, IvfSearchOptions{kK, 32, optimistic, prefetch});
    }
  }
  expect_exact(ivf, d, want, IvfSearchOptions{kK, 1000, true, true});

  IvfSearchState st(ivf);
  std::vector<std::vector<Neighbor>> first;
  double sum = 0;
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    std::vector<Neighbor> got;
    ivf.search(d.query(q), IvfSearchOptions{kK, 4, true, true}, st, &got);
    ASSERT_EQ(got.size(), kK);
    ASSERT_TRUE(std::is_sorted(got.begin(), got.end()));
    sum += recall(got, want[q]);
    first.push_back(got);
  }
  EXPECT_GE(sum / double(d.num_queries()), 0.9) << "recall@10 at nprobe 4 of 32";
  for (bool optimistic : {true, false}) {
    for (bool prefetch : {true, false}) {
      expect_exact(ivf, d, first, IvfSearchOptions{kK, 4, optimistic, prefetch});
    }
  }
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
  pool->check_invariants();
}

// Four threads search (mixed read modes; two of them by search_batch, so that sgemm runs in
// several threads at once) while a fifth adds rows far from every query: the searches must
// keep returning the reference; afterwards every added row is found (as its own nearest
// neighbour, also with nprobe = 1) and the structure holds.
TYPED_TEST(IvfOnEveryTranslation, ConcurrentSearchesWithAdd) {
  const Data d = clustered(2000, 16, 30, 24, 2);
  const auto want = reference(d, Metric::kL2, kK);
  TempDir dir;
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
  auto ivf = BasicIvf<TypeParam>::build(*pool, "ivf", params_for(d, 16), d.rows.data(), d.n);
  constexpr uint32_t kAdds = 300;
  auto added = [&](uint32_t i) {
    std::vector<float> v(d.dim);
    for (uint32_t j = 0; j < d.dim; ++j) v[j] = 1000.0f + float((i * 7 + j * 13) % 101) + float(i) / 8;
    return v;
  };
  std::atomic<int> mismatches{0};
  std::atomic<bool> adding{true};
  auto searcher = [&](int t) {
    IvfSearchState st(ivf);
    std::vector<std::vector<Neighbor>> got(d.num_queries());
    for (int round = 0; round < 3 || adding.load(); ++round) {
      if (t % 2 == 1) {
        const IvfSearchOptions o{kK, 16, (round + t / 2) % 2 == 0, round % 2 == 0};
        ivf.search_batch(d.query(0), d.num_queries(), o, st, got.data());
      } else {
        for (uint64_t q = 0; q < d.num_queries(); ++q) {
          const IvfSearchOptions o{kK, 16, (q + t / 2) % 2 == 0, (q + round) % 2 == 0};
          ivf.search(d.query(q), o, st, &got[q]);
        }
      }
      for (uint64_t q = 0; q < d.num_queries(); ++q) {
        if (got[q] != want[q]) mismatches.fetch_add(1);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(searcher, t);
  for (uint32_t i = 0; i < kAdds; ++i) ivf.add(static_cast<uint32_t>(d.n + i), added(i).data());
  adding.store(false);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  ASSERT_EQ(ivf.size(), d.n + kAdds);
  ASSERT_EQ(ivf.verify(), d.n + kAdds);
  IvfSearchState st(ivf);
  std::vector<Neighbor> got;
  for (uint32_t i = 0; i < kAdds; ++i) {
    for (uint32_t nprobe : {1u, 16u}) {
      ivf.search(added(i).data(), IvfSearchOptions{1, nprobe, true, true}, st, &got);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].id, d.n + i);
      EXPECT_EQ(got[0].distance, 0.0f);
    }
  }
  expect_exact(ivf, d, want, IvfSearchOptions{kK, 16, true, true});
  pool->check_invariants();
}

// Build, add, flush, reopen the pool, open the index: same parameters, same results.
TYPED_TEST(IvfOnEveryTranslation, SurvivesAPoolReopen) {
  const Data d = clustered(1500, 20, 20, 20, 3);
  TempDir dir;
  std::vector<std::vector<Neighbor>> before;
  IvfParams built;
  const std::vector<float> extra(d.dim, 50.0f);
  {
    auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
    auto ivf = BasicIvf<TypeParam>::build(*pool, "ivf", params_for(d, 12), d.rows.data(), d.n);
    ivf.add(777777, extra.data());
    built = ivf.params();
    IvfSearchState st(ivf);
    for (uint64_t q = 0; q < d.num_queries(); ++q) {
      before.emplace_back();
      ivf.search(d.query(q), IvfSearchOptions{kK, 3, true, true}, st, &before.back());
    }
    pool->flush();
  }
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
  auto ivf = BasicIvf<TypeParam>::open(*pool, "ivf");
  EXPECT_EQ(ivf.size(), d.n + 1);
  EXPECT_EQ(ivf.verify(), d.n + 1);
  const IvfParams p = ivf.params();
  EXPECT_EQ(p.dim, built.dim);
  EXPECT_EQ(p.nlist, 12u);
  EXPECT_EQ(p.metric, Metric::kL2);
  EXPECT_EQ(p.train_sample, 768u);  // 64 * nlist
  EXPECT_EQ(p.seed, built.seed);
  expect_exact(ivf, d, before, IvfSearchOptions{kK, 3, true, true});
  IvfSearchState st(ivf);
  std::vector<Neighbor> got;
  ivf.search(extra.data(), IvfSearchOptions{1, 1, true, false}, st, &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 777777u);
  pool->check_invariants();
}

TYPED_TEST(IvfOnEveryTranslation, BadInputIsRejected) {
  const Data d = clustered(200, 8, 4, 1, 4);
  TempDir dir;
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
  using Ivf = BasicIvf<TypeParam>;
  auto build = [&](IvfParams p, const float* rows, uint64_t n) { Ivf::build(*pool, "bad", p, rows, n); };
  const float* rows = d.rows.data();
  IvfParams p = params_for(d, 4);
  p.dim = 0;
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, rows, d.n); });
  p.dim = index::IvfFormat::max_dim(pool->usable_page_size()) + 1;
  std::vector<float> wide(size_t{p.dim} * 4, 1.0f);
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, wide.data(), 4); });
  p = params_for(d, 0);
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, rows, d.n); });
  p = params_for(d, 201);
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, rows, d.n); });
  p = params_for(d, 4);
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, rows, 0); });
  std::vector<float> broken(d.rows);
  broken[77] = std::numeric_limits<float>::quiet_NaN();
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, broken.data(), d.n); });
  broken[77] = -std::numeric_limits<float>::infinity();
  expect_error(ErrorCode::kInvalidArgument, [&] { build(p, broken.data(), d.n); });
  std::vector<float> zero_row(d.rows);
  std::fill_n(zero_row.begin() + 5 * d.dim, d.dim, 0.0f);
  expect_error(ErrorCode::kInvalidArgument, [&] { build(params_for(d, 4, Metric::kCosine), zero_row.data(), d.n); });
  // Nothing was created by the failed builds.
  expect_error(ErrorCode::kUnknownSpace, [&] { Ivf::open(*pool, "bad"); });

  auto ivf = Ivf::build(*pool, "good", params_for(d, 4), rows, d.n);
  IvfSearchState st(ivf);
  std::vector<Neighbor> out;
  expect_error(ErrorCode::kInvalidArgument, [&] { ivf.search(rows, IvfSearchOptions{0, 4, true, true}, st, &out); });
  expect_error(ErrorCode::kInvalidArgument, [&] { ivf.search(rows, IvfSearchOptions{10, 0, true, true}, st, &out); });
  std::vector<float> q(rows, rows + d.dim);
  q[3] = std::numeric_limits<float>::quiet_NaN();
  expect_error(ErrorCode::kInvalidArgument, [&] { ivf.search(q.data(), IvfSearchOptions{}, st, &out); });
  expect_error(ErrorCode::kInvalidArgument, [&] { ivf.add(1000, q.data()); });
  EXPECT_EQ(ivf.verify(), d.n) << "a rejected add writes nothing";
  expect_error(ErrorCode::kSpaceExists, [&] { Ivf::build(*pool, "good", params_for(d, 4), rows, d.n); });

  auto cos = Ivf::build(*pool, "cos", params_for(d, 4, Metric::kCosine), rows, d.n);
  std::vector<float> zero(d.dim, 0.0f);
  expect_error(ErrorCode::kInvalidArgument, [&] { cos.search(zero.data(), IvfSearchOptions{}, st, &out); });
  expect_error(ErrorCode::kInvalidArgument, [&] { cos.add(5, zero.data()); });

  pool->create_space("empty");
  expect_error(ErrorCode::kInvalidArgument, [&] { Ivf::open(*pool, "empty"); });
  const SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, other, 3, [](BlockId b) { return b + 1; });
  expect_error(ErrorCode::kInvalidArgument, [&] { Ivf::open(*pool, "other"); });
  expect_error(ErrorCode::kUnknownSpace, [&] { Ivf::open(*pool, "missing"); });
  pool->check_invariants();
}

// search_batch (centroids ranked by one sgemm per block, then the kernel near the cut)
// returns exactly what search() returns per query, for blocks of 1, 7, 33 (above
// CoarseRanker::kBlockQueries) and all 40 queries, several nprobe, both read modes, on a pool
// smaller than the index (InnerProductAndCosineAreExactWithEveryList: the same for ip and
// cosine).
template <class Pool>
void expect_batch_equals_search(const BasicIvf<Pool>& ivf, const Data& d, uint32_t nprobe, bool optimistic) {
  const IvfSearchOptions opt{kK, nprobe, optimistic, true};
  IvfSearchState st(ivf);
  std::vector<std::vector<Neighbor>> want(d.num_queries());
  for (uint64_t q = 0; q < d.num_queries(); ++q) ivf.search(d.query(q), opt, st, &want[q]);
  for (size_t block : {size_t{1}, size_t{7}, size_t{33}, size_t(d.num_queries())}) {
    IvfSearchState bst;  // default-constructed: sizes itself
    std::vector<std::vector<Neighbor>> got(d.num_queries());
    for (size_t q0 = 0; q0 < d.num_queries(); q0 += block) {
      const size_t n = std::min<size_t>(block, d.num_queries() - q0);
      ivf.search_batch(d.query(q0), n, opt, bst, &got[q0]);
    }
    for (uint64_t q = 0; q < d.num_queries(); ++q) {
      ASSERT_EQ(got[q], want[q]) << "query " << q << " block " << block << " nprobe " << nprobe;
    }
  }
}

TYPED_TEST(IvfOnEveryTranslation, SearchBatchEqualsSearch) {
  const Data d = clustered(2000, 16, 30, 40, 8);
  TempDir dir;
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), kFrames));
  auto ivf = BasicIvf<TypeParam>::build(*pool, "ivf", params_for(d, 32), d.rows.data(), d.n);
  for (uint32_t nprobe : {1u, 32u}) expect_batch_equals_search(ivf, d, nprobe, true);
  expect_batch_equals_search(ivf, d, 3, false);
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
  pool->check_invariants();
}

// A bad query anywhere in the block is rejected (naming it) before any query is searched:
// the outputs keep what they held.
// Larger pages hold more records per posting page (81 at dim 24 in 8 KB, 163 in 16 KB) and the
// lookahead prefetches every line of them: exact with every list in every read mode, the
// same results at a small nprobe in every read mode, on a pool that evicts.
class IvfOnPageSizes : public ::testing::TestWithParam<size_t> {};
INSTANTIATE_TEST_SUITE_P(Ivf, IvfOnPageSizes, ::testing::Values(8192, 16384));

TEST_P(IvfOnPageSizes, ExactWithEveryListAndStableWithFew) {
  const size_t page_size = GetParam();
  const Data d = clustered(6000, 24, 40, 30, 3);
  const auto want = reference(d, Metric::kL2, kK);
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 24, page_size));  // the index: 40-80 pages
  auto ivf = BasicIvf<BufferPool>::build(*pool, "ivf", params_for(d, 16), d.rows.data(), d.n);
  ASSERT_EQ(ivf.records_per_page(), index::IvfFormat::records_per_page(page_size - BufferPool::kTrailerBytes, d.dim));
  ASSERT_EQ(ivf.verify(), d.n);
  expect_rows_in_nearest_list(ivf, d);
  for (bool optimistic : {true, false}) {
    for (bool prefetch : {true, false}) {
      expect_exact(ivf, d, want, IvfSearchOptions{kK, 16, optimistic, prefetch});
    }
  }
  IvfSearchState st(ivf);
  std::vector<std::vector<Neighbor>> first(d.num_queries());
  for (uint64_t q = 0; q < d.num_queries(); ++q) ivf.search(d.query(q), IvfSearchOptions{kK, 3, true, true}, st, &first[q]);
  for (bool optimistic : {true, false}) expect_exact(ivf, d, first, IvfSearchOptions{kK, 3, optimistic, !optimistic});
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
  pool->check_invariants();
}

TEST(Ivf, SearchBatchRejectsABadQueryFirst) {
  const Data d = clustered(600, 8, 8, 10, 10);
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), kFrames));
  auto ivf = BasicIvf<BufferPool>::build(*pool, "ivf", params_for(d, 8, Metric::kCosine), d.rows.data(), d.n);
  IvfSearchState st(ivf);
  std::vector<float> qs(d.query(0), d.query(0) + 6 * d.dim);
  const std::vector<Neighbor> marker{{-1.0f, 99}};
  std::vector<std::vector<Neighbor>> out(6, marker);
  qs[4 * d.dim + 1] = std::numeric_limits<float>::quiet_NaN();
  Error e = expect_error(ErrorCode::kInvalidArgument, [&] { ivf.search_batch(qs.data(), 6, IvfSearchOptions{}, st, out.data()); });
  EXPECT_NE(std::string(e.what()).find("query 4"), std::string::npos) << e.what();
  std::fill(qs.begin() + 4 * d.dim, qs.begin() + 5 * d.dim, 0.0f);  // zero: no cosine distance
  expect_error(ErrorCode::kInvalidArgument, [&] { ivf.search_batch(qs.data(), 6, IvfSearchOptions{}, st, out.data()); });
  for (const auto& o : out) EXPECT_EQ(o, marker);
  expect_error(ErrorCode::kInvalidArgument,
               [&] { ivf.search_batch(d.query(0), 1, IvfSearchOptions{kK, 0, true, true}, st, out.data()); });
  ivf.search_batch(nullptr, 0, IvfSearchOptions{}, st, nullptr);  // an empty block: nothing to do
}

// Inner product and cosine (rows stored normalised): exact with every list, on the array
// pool; search_batch equals search there too (40 queries: blocks above kBlockQueries).
TEST(Ivf, InnerProductAndCosineAreExactWithEveryList) {
  const Data d = clustered(1500, 16, 20, 40, 6);
  for (Metric metric : {Metric::kInnerProduct, Metric::kCosine}) {
    TempDir dir;
    auto pool = BufferPool::open(small_options(dir.path(), kFrames));
    auto ivf = BasicIvf<BufferPool>::build(*pool, "ivf", params_for(d, 10, metric), d.rows.data(), d.n);
    EXPECT_EQ(ivf.metric(), metric);
    expect_rows_in_nearest_list(ivf, d);
    const auto want = reference(d, metric, kK);
    for (bool optimistic : {true, false}) expect_exact(ivf, d, want, IvfSearchOptions{kK, 10, optimistic, true});
    for (uint32_t nprobe : {1u, 4u}) expect_batch_equals_search(ivf, d, nprobe, true);
  }
}

// 200 copies of one row with nlist 4: lists may be empty (one empty page each) and every
// search still returns the k rows with distance 0 and the smallest ids; k above the rows
// returns them all.
TEST(Ivf, RepeatedRowsAndEmptyLists) {
  Data d;
  d.dim = 8;
  d.n = 200;
  for (uint64_t i = 0; i < d.n; ++i) {
    for (uint32_t j = 0; j < d.dim; ++j) d.rows.push_back(float(j));
  }
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), kFrames));
  auto ivf = BasicIvf<BufferPool>::build(*pool, "ivf", params_for(d, 4), d.rows.data(), d.n);
  EXPECT_EQ(ivf.verify(), 200u);
  IvfSearchState st;  // default-constructed: sized on first use
  std::vector<Neighbor> got;
  ivf.search(d.row(0), IvfSearchOptions{5, 1, true, true}, st, &got);
  ASSERT_EQ(got.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], (Neighbor{0.0f, i}));
  ivf.search(d.row(0), IvfSearchOptions{500, 4, false, false}, st, &got);
  EXPECT_EQ(got.size(), 200u);
}

// Progress is reported in order, ends at (2 n, 2 n), and covers both phases.
TEST(Ivf, ReportsProgress) {
  const Data d = clustered(40000, 8, 10, 0, 7);  // more than one assignment chunk
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  IvfParams p = params_for(d, 8);
  p.train_iters = 2;
  BasicIvf<BufferPool>::build(*pool, "ivf", p, d.rows.data(), d.n,
                              [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); });
  ASSERT_GE(calls.size(), 3u + 8u);  // 3 assignment chunks, 8 lists
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, 2 * d.n);
    if (i > 0) {
      EXPECT_GE(calls[i].first, calls[i - 1].first);
    }
  }
  EXPECT_EQ(calls.back().first, 2 * d.n);
  EXPECT_TRUE(std::any_of(calls.begin(), calls.end(), [&](auto c) { return c.first == d.n; }));
}

// train_only: the rows train the centroids but none is stored (every list one empty page);
// rows added afterwards are found exactly with every list probed, and the index reopens
// with them.
TEST(Ivf, TrainOnlyThenAdd) {
  const Data d = clustered(1200, 8, 12, 10, 9);
  TempDir dir;
  {
    auto pool = BufferPool::open(small_options(dir.path(), kFrames));
    IvfParams p = params_for(d, 6);
    p.train_only = true;
    auto ivf = BasicIvf<BufferPool>::build(*pool, "ivf", p, d.rows.data(), d.n);
    EXPECT_EQ(ivf.size(), 0u);
    EXPECT_EQ(ivf.verify(), 0u);
    IvfSearchState st;
    std::vector<Neighbor> got;
    ivf.search(d.row(0), IvfSearchOptions{kK, 6, true, true}, st, &got);
    EXPECT_TRUE(got.empty());
    for (uint64_t i = 0; i < d.n; ++i) ivf.add(static_cast<uint32_t>(i), d.row(i));
    EXPECT_EQ(ivf.size(), d.n);
    EXPECT_EQ(ivf.verify(), d.n);
    expect_exact(ivf, d, reference(d, Metric::kL2, kK), IvfSearchOptions{kK, 6, true, true});
  }
  auto pool = BufferPool::open(small_options(dir.path(), kFrames));
  auto ivf = BasicIvf<BufferPool>::open(*pool, "ivf");
  EXPECT_EQ(ivf.size(), d.n);
  expect_exact(ivf, d, reference(d, Metric::kL2, kK), IvfSearchOptions{kK, 6, false, false});
}

}  // namespace
}  // namespace calico
