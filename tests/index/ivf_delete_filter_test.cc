// IVF removal and filtered search (include/calico/index/ivf.h, "Removal" and "Filtered
// search"), against a brute-force model of the rows: random interleavings of add (new ids,
// repeated ids, ids removed before), remove and searches with and without allow-lists, on
// pools far smaller than the index (every step evicts), on every evicting translation;
// nprobe = nlist must equal the model exactly, a small nprobe must still return min(k,
// allowed rows); verify() and size() after each phase; bad batches (an unknown id, an id
// twice) change nothing; filters from one allowed id to all; deletions survive a pool
// reopen; concurrent adds, removes and searches.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/ivf.h"
#include "support/failure_log.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "support/vector_data.h"

namespace calico {
namespace {

using index::BasicIvf;
using index::IvfParams;
using index::IvfSearchOptions;
using index::IvfSearchState;
using testing::Data;
using testing::TempDir;
using vector::IdFilter;
using vector::Metric;
using vector::Neighbor;

constexpr uint32_t kDim = 8;
constexpr uint32_t kNlist = 12;
constexpr uint32_t kK = 10;
constexpr uint32_t kIdSpace = 4096;      // ids the model test draws from (filters are over them)
constexpr uint32_t kTinyPoolFrames = 16;  // the index has 30-60 posting pages: every step evicts

IvfParams params(uint32_t nlist = kNlist) {
  IvfParams p;
  p.dim = kDim;
  p.nlist = nlist;
  p.train_iters = 6;
  p.seed = 11;
  p.threads = 1;
  return p;
}

// The model: the index's rows as (id, vector) pairs, a multiset (an id may have several
// rows), and the exact answer over the rows a filter allows.
struct Model {
  struct Row {
    uint32_t id;
    const float* v;
  };
  std::vector<Row> rows;
  vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);

  static bool allowed_by(const std::vector<uint64_t>* allow, uint32_t id) {
    return allow == nullptr || IdFilter{*allow}.allows(id);
  }
  bool has(uint32_t id) const {
    return std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.id == id; });
  }
  void remove(uint32_t id) {
    std::erase_if(rows, [&](const Row& r) { return r.id == id; });
  }
  // The exact top k among the allowed rows; *allowed: how many rows the filter allows.
  std::vector<Neighbor> exact(const float* q, const std::vector<uint64_t>* allow, size_t* allowed) const {
    std::vector<Neighbor> all;
    for (const Row& r : rows) {
      if (allowed_by(allow, r.id)) all.push_back({dist(q, r.v, kDim), r.id});
    }
    *allowed = all.size();
    std::sort(all.begin(), all.end());
    all.resize(std::min<size_t>(kK, all.size()));
    return all;
  }
};

// What every result must be, whatever nprobe: min(k, allowed rows) entries, sorted, each a
// row of the model that the filter allows, at its exact distance (a row with that id and
// that distance exists).
void expect_admissible(const Model& m, const float* q, const std::vector<uint64_t>* allow,
                       const std::vector<Neighbor>& got, const std::string& what) {
  size_t allowed = 0;
  m.exact(q, allow, &allowed);
  ASSERT_EQ(got.size(), std::min<size_t>(kK, allowed)) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const Neighbor n = got[i];
    ASSERT_TRUE(Model::allowed_by(allow, n.id)) << what << ": id " << n.id << " is filtered out";
    const bool row = std::any_of(m.rows.begin(), m.rows.end(),
                                 [&](const Model::Row& r) { return r.id == n.id && m.dist(q, r.v, kDim) == n.distance; });
    ASSERT_TRUE(row) << what << ": (" << n.distance << ", " << n.id << ") is no row of the index";
    if (i > 0) {
      ASSERT_FALSE(got[i] < got[i - 1]) << what << ": not sorted";
    }
  }
}

// Expects kInvalidArgument whose message names `part`.
template <class Fn>
void expect_invalid(const std::string& part, Fn&& fn) {
  const Error e = testing::expect_error(ErrorCode::kInvalidArgument, fn);
  EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
}

std::vector<uint64_t> allow_fraction(std::mt19937_64& rng, double fraction) {
  std::vector<uint64_t> words(kIdSpace / 64, 0);
  std::bernoulli_distribution pick(fraction);
  for (uint32_t id = 0; id < kIdSpace; ++id) {
    if (pick(rng)) words[id / 64] |= uint64_t{1} << (id % 64);
  }
  return words;
}

std::vector<uint64_t> allow_only(std::initializer_list<uint32_t> ids) {
  std::vector<uint64_t> words(kIdSpace / 64, 0);
  for (uint32_t id : ids) words[id / 64] |= uint64_t{1} << (id % 64);
  return words;
}

// Every list's ids in stored order: the index's whole content, for "nothing changed".
template <class Pool>
std::vector<std::vector<uint32_t>> contents(const BasicIvf<Pool>& ivf) {
  std::vector<std::vector<uint32_t>> lists(ivf.nlist());
  for (uint32_t l = 0; l < ivf.nlist(); ++l) ivf.list_ids(l, &lists[l]);
  return lists;
}

template <class Pool>
class IvfRemoveFilterOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(IvfRemoveFilterOnEveryTranslation, testing::IndexPools, testing::PoolName);

// Five phases of 150 random steps on a 16-frame pool: add (40%: a new id 70%, an id with
// rows already 20% (a second row), a removed id 10%), remove a batch of 1-4 ids with rows
// (20%), a rejected batch (5%: an unknown or a repeated id; nothing may change), search
// (35%: no filter or allow-lists of one id, 1%, 10%, 50%, every id; nprobe = nlist against
// the model exactly, nprobe 1-3 by expect_admissible; search_batch equal to search). After
// each phase verify() and size() equal the model; after phase 2 the pool is flushed and
// reopened and the index opened again.
TYPED_TEST(IvfRemoveFilterOnEveryTranslation, ModelOfAddRemoveAndFilteredSearch) {
  const Data d = testing::clustered(3000, kDim, 10, 60, 21);
  TempDir dir;
  auto opts = testing::pool_options<TypeParam>(dir.path(), kTinyPoolFrames);
  std::unique_ptr<TypeParam> pool = TypeParam::open(opts);
  Model m;
  constexpr uint32_t kBuilt = 800;
  auto ivf = std::make_unique<BasicIvf<TypeParam>>(
      BasicIvf<TypeParam>::build(*pool, "ivf", params(), d.rows.data(), kBuilt));
  for (uint32_t i = 0; i < kBuilt; ++i) m.rows.push_back({i, d.row(i)});
  uint32_t next_vector = kBuilt, next_id = kBuilt;
  std::vector<uint32_t> removed_ids;
  std::mt19937_64 rng(77);
  IvfSearchState st;
  std::vector<Neighbor> got, batch_got;
  uint64_t exact_checks = 0, short_checks = 0, rejected = 0, removed_rows = 0, repeated_rows = 0;
  auto some_id_with_rows = [&] { return m.rows[rng() % m.rows.size()].id; };
  for (int phase = 0; phase < 5; ++phase) {
    for (int step = 0; step < 150; ++step) {
      const std::string at = "phase " + std::to_string(phase) + " step " + std::to_string(step);
      const uint32_t dice = rng() % 100;
      if (dice < 40 && next_vector < d.n) {  // add
        const uint32_t kind = rng() % 10;
        uint32_t id;
        if (kind < 2 && !m.rows.empty()) {
          id = some_id_with_rows();
          ++repeated_rows;
        } else if (kind < 3 && !removed_ids.empty()) {
          id = removed_ids[rng() % removed_ids.size()];
        } else {
          id = next_id++;
        }
        ASSERT_LT(id, kIdSpace);
        const float* v = d.row(next_vector++);
        ivf->add(id, v);
        m.rows.push_back({id, v});
      } else if (dice < 60 && m.rows.size() > kK) {  // remove a batch
        std::vector<uint32_t> batch;
        const size_t want = 1 + rng() % 4;
        while (batch.size() < want) {
          const uint32_t id = some_id_with_rows();
          if (std::find(batch.begin(), batch.end(), id) == batch.end()) batch.push_back(id);
        }
        const uint64_t before = m.rows.size();
        ivf->remove(batch.data(), batch.size());
        for (uint32_t id : batch) {
          m.remove(id);
          removed_ids.push_back(id);
        }
        removed_rows += before - m.rows.size();
        ASSERT_EQ(ivf->size(), m.rows.size()) << at;
      } else if (dice < 65) {  // a rejected batch: nothing changes
        const auto lists = contents(*ivf);
        std::vector<uint32_t> batch{some_id_with_rows(), some_id_with_rows()};
        uint32_t bad;
        if (rng() % 2 == 0) {
          bad = next_id + 1000 + static_cast<uint32_t>(rng() % 1000);  // never added
          batch.insert(batch.begin() + 1, bad);
          if (batch[0] == batch[2]) batch.pop_back();
          expect_invalid("id " + std::to_string(bad) + " (element 1) is not in the index",
                         [&] { ivf->remove(batch.data(), batch.size()); });
        } else {
          batch.push_back(batch[0]);  // repeated
          bad = batch[0];
          expect_invalid("id " + std::to_string(bad), [&] { ivf->remove(batch.data(), batch.size()); });
        }
        ASSERT_EQ(ivf->size(), m.rows.size()) << at;
        ASSERT_EQ(contents(*ivf), lists) << at << ": a rejected batch changed the index";
        ++rejected;
      } else {  // search
        const float* q = d.query(rng() % d.num_queries());
        std::vector<uint64_t> allow;
        const uint32_t f = rng() % 6;
        if (f == 1) allow = allow_only({some_id_with_rows()});
        if (f == 2) allow = allow_fraction(rng, 0.01);
        if (f == 3) allow = allow_fraction(rng, 0.1);
        if (f == 4) allow = allow_fraction(rng, 0.5);
        if (f == 5) allow = std::vector<uint64_t>(kIdSpace / 64, ~uint64_t{0});
        const std::vector<uint64_t>* a = f == 0 ? nullptr : &allow;
        const bool optimistic = rng() % 2 == 0, prefetch = rng() % 2 == 0;
        auto run = [&](uint32_t nprobe, std::vector<Neighbor>* out) {
          const IvfSearchOptions opt{kK, nprobe, optimistic, prefetch};
          if (a) ivf->search(q, opt, st, out, IdFilter{*a}); else ivf->search(q, opt, st, out);
        };
        size_t allowed = 0;
        run(kNlist, &got);
        ASSERT_EQ(got, m.exact(q, a, &allowed)) << at << " filter " << f << " (exact: nprobe = nlist)";
        ++exact_checks;
        const uint32_t nprobe = 1 + rng() % 3;
        run(nprobe, &got);
        if (a) {
          expect_admissible(m, q, a, got, at + " filter " + std::to_string(f) + " nprobe " + std::to_string(nprobe));
          ++short_checks;
          batch_got.clear();
          ivf->search_batch(q, 1, IvfSearchOptions{kK, nprobe, optimistic, prefetch}, st, &batch_got, IdFilter{*a});
          ASSERT_EQ(batch_got, got) << at << ": search_batch with a filter";
        }
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    ASSERT_EQ(ivf->size(), m.rows.size()) << "phase " << phase;
    ASSERT_EQ(ivf->verify(), m.rows.size()) << "phase " << phase;
    if (phase == 2) {  // deletions and additions survive a flush and reopen
      const auto lists = contents(*ivf);
      pool->flush();
      ivf.reset();
      pool.reset();
      pool = TypeParam::open(opts);
      ivf = std::make_unique<BasicIvf<TypeParam>>(BasicIvf<TypeParam>::open(*pool, "ivf"));
      ASSERT_EQ(ivf->size(), m.rows.size());
      ASSERT_EQ(ivf->verify(), m.rows.size());
      ASSERT_EQ(contents(*ivf), lists) << "the reopened index differs";
    }
  }
  // The random walk covered what it is meant to.
  EXPECT_GT(exact_checks, 100u);
  EXPECT_GT(short_checks, 50u);
  EXPECT_GT(rejected, 10u);
  EXPECT_GT(removed_rows, 100u);
  EXPECT_GT(repeated_rows, 20u);
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
  pool->check_invariants();
}

using Ivf = BasicIvf<BufferPool>;

// A removed id's rows are all gone (a repeated id is several rows), in every list; every
// query's exact answer afterwards is brute force over the remaining rows; the emptied
// pages stay in their chains (verify), and add() still appends (to the tail).
TEST(IvfRemove, RemovesEveryRowOfAnIdAndKeepsTheChains) {
  const Data d = testing::clustered(2000, kDim, 10, 30, 22);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
  Ivf ivf = Ivf::build(*pool, "ivf", params(), d.rows.data(), 1500);
  Model m;
  for (uint32_t i = 0; i < 1500; ++i) m.rows.push_back({i, d.row(i)});
  for (uint32_t i = 1500; i < 1700; ++i) {  // ids 0..199 get a second row, elsewhere
    ivf.add(i - 1500, d.row(i));
    m.rows.push_back({i - 1500, d.row(i)});
  }
  const uint64_t blocks = pool->space_blocks(ivf.space());
  std::vector<uint32_t> gone;
  for (uint32_t id = 0; id < 1500; id += 2) gone.push_back(id);  // half the rows: pages mid-chain go short
  ivf.remove(gone.data(), gone.size());
  for (uint32_t id : gone) m.remove(id);
  EXPECT_EQ(ivf.size(), m.rows.size());
  EXPECT_EQ(ivf.verify(), m.rows.size());
  EXPECT_EQ(pool->space_blocks(ivf.space()), blocks) << "remove frees and allocates no page";
  std::vector<uint32_t> ids;
  for (uint32_t l = 0; l < ivf.nlist(); ++l) {
    ivf.list_ids(l, &ids);
    for (uint32_t id : ids) ASSERT_TRUE(id % 2 == 1 || id >= 1500) << "removed id " << id << " in list " << l;
  }
  IvfSearchState st(ivf);
  std::vector<Neighbor> got;
  size_t allowed = 0;
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    ivf.search(d.query(q), IvfSearchOptions{kK, kNlist, true, true}, st, &got);
    ASSERT_EQ(got, m.exact(d.query(q), nullptr, &allowed)) << "query " << q;
  }
  // Empty a whole list: its pages stay, searches and add() go on.
  ivf.list_ids(3, &ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ivf.remove(ids.data(), ids.size());
  for (uint32_t id : ids) m.remove(id);
  std::vector<uint32_t> left;
  ivf.list_ids(3, &left);
  EXPECT_TRUE(left.empty());
  EXPECT_EQ(ivf.verify(), m.rows.size());
  for (uint32_t i = 1700; i < 2000; ++i) {
    ivf.add(5000 + i, d.row(i));
    m.rows.push_back({5000 + i, d.row(i)});
  }
  EXPECT_EQ(ivf.verify(), m.rows.size());
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    for (bool optimistic : {true, false}) {
      ivf.search(d.query(q), IvfSearchOptions{kK, kNlist, optimistic, !optimistic}, st, &got);
      ASSERT_EQ(got, m.exact(d.query(q), nullptr, &allowed)) << "query " << q;
    }
  }
  pool->check_invariants();
}

// Bad batches: an unknown id (first, middle or last; named with its position), an id given
// twice (named), a null pointer. Nothing is removed: size, verify, every list's contents and
// every search's results are as before. An empty batch is a no-op.
TEST(IvfRemove, BadBatchesChangeNothing) {
  const Data d = testing::clustered(1200, kDim, 8, 20, 23);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
  Ivf ivf = Ivf::build(*pool, "ivf", params(), d.rows.data(), d.n);
  const uint32_t one = 5;
  ivf.remove(&one, 1);
  const auto lists = contents(ivf);
  IvfSearchState st(ivf);
  auto answers = [&] {
    std::vector<std::vector<Neighbor>> out(d.num_queries());
    for (uint64_t q = 0; q < d.num_queries(); ++q) ivf.search(d.query(q), IvfSearchOptions{kK, 4, true, true}, st, &out[q]);
    return out;
  };
  const auto before = answers();
  auto expect_unchanged = [&](const std::string& what) {
    EXPECT_EQ(ivf.size(), d.n - 1) << what;
    EXPECT_EQ(ivf.verify(), d.n - 1) << what;
    EXPECT_EQ(contents(ivf), lists) << what;
    EXPECT_EQ(answers(), before) << what;
  };
  std::vector<uint32_t> b{7, 9, 99999, 11};
  expect_invalid("id 99999 (element 2) is not in the index", [&] { ivf.remove(b.data(), b.size()); });
  expect_unchanged("unknown id in the middle");
  b = {7, 9, 11, 5};  // 5: removed before
  expect_invalid("id 5 (element 3) is not in the index", [&] { ivf.remove(b.data(), b.size()); });
  expect_unchanged("a removed id last");
  b = {123456, 7};
  expect_invalid("id 123456 (element 0)", [&] { ivf.remove(b.data(), b.size()); });
  expect_unchanged("unknown id first");
  b = {7, 9, 11, 9, 7};
  expect_invalid("id 9 (element 3) is given twice", [&] { ivf.remove(b.data(), b.size()); });
  expect_unchanged("repeated id");
  expect_invalid("no ids", [&] { ivf.remove(nullptr, 3); });
  ivf.remove(nullptr, 0);
  ivf.remove(b.data(), 0);
  expect_unchanged("empty batches");
  b = {7, 9, 11};
  ivf.remove(b.data(), b.size());
  EXPECT_EQ(ivf.size(), d.n - 4) << "the same ids in a good batch are removed";
  pool->check_invariants();
}

// Filters from one allowed id to every id, at nprobe = nlist (exact: brute force over the
// allowed rows) and nprobe 1 (still min(k, allowed rows) rows: the search goes on to
// further lists while short); an allow-list of ids not in the index returns nothing; a
// filter allowing every id returns what the unfiltered search returns whenever the nprobe
// lists hold k rows; search_batch with a filter equals search with it.
TEST(IvfFilter, EverySelectivityReturnsMinOfKAndAllowedRows) {
  const Data d = testing::clustered(3000, kDim, 16, 30, 24);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
  Ivf ivf = Ivf::build(*pool, "ivf", params(32), d.rows.data(), d.n);
  Model m;
  for (uint32_t i = 0; i < d.n; ++i) m.rows.push_back({i, d.row(i)});
  IvfSearchState st(ivf);
  std::vector<Neighbor> got, plain, batch;
  std::mt19937_64 rng(5);
  std::vector<std::vector<uint64_t>> filters;
  filters.push_back(allow_only({1234}));
  filters.push_back(allow_only({3, 2999}));
  filters.push_back(allow_only({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));  // exactly k
  for (double f : {0.001, 0.01, 0.1, 0.5, 0.9}) filters.push_back(allow_fraction(rng, f));
  filters.push_back(std::vector<uint64_t>(kIdSpace / 64, ~uint64_t{0}));
  size_t allowed = 0;
  for (size_t fi = 0; fi < filters.size(); ++fi) {
    const IdFilter filter{filters[fi]};
    for (uint64_t q = 0; q < d.num_queries(); ++q) {
      const auto want = m.exact(d.query(q), &filters[fi], &allowed);
      for (bool optimistic : {true, false}) {
        ivf.search(d.query(q), IvfSearchOptions{kK, 32, optimistic, optimistic}, st, &got, filter);
        ASSERT_EQ(got, want) << "filter " << fi << " query " << q << " nprobe 32";
      }
      for (uint32_t nprobe : {1u, 2u}) {
        ivf.search(d.query(q), IvfSearchOptions{kK, nprobe, true, true}, st, &got, filter);
        expect_admissible(m, d.query(q), &filters[fi], got, "filter " + std::to_string(fi) + " nprobe " + std::to_string(nprobe));
        ASSERT_EQ(got.size(), std::min<size_t>(kK, allowed));
        batch.clear();
        ivf.search_batch(d.query(q), 1, IvfSearchOptions{kK, nprobe, true, true}, st, &batch, filter);
        ASSERT_EQ(batch, got);
        if (fi + 1 == filters.size()) {  // every id allowed
          ivf.search(d.query(q), IvfSearchOptions{kK, nprobe, true, true}, st, &plain);
          if (plain.size() == kK) {
            ASSERT_EQ(got, plain) << "query " << q;
          }
        }
      }
    }
  }
  // A single allowed id is found from anywhere, with one probed list.
  for (uint32_t id : {0u, 777u, 2999u}) {
    const auto only = allow_only({id});
    ivf.search(d.query(0), IvfSearchOptions{kK, 1, true, true}, st, &got, IdFilter{only});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].id, id);
  }
  const auto absent = allow_only({3500, 4000});
  ivf.search(d.query(0), IvfSearchOptions{kK, 1, true, true}, st, &got, IdFilter{absent});
  EXPECT_TRUE(got.empty());
  ivf.search(d.query(0), IvfSearchOptions{kK, 1, true, true}, st, &got, IdFilter{});
  EXPECT_TRUE(got.empty()) << "an empty bitmap allows nothing";
  // A filtered search_batch of several queries equals search per query.
  std::vector<std::vector<Neighbor>> outs(d.num_queries());
  const IdFilter tenth{filters[5]};
  ivf.search_batch(d.query(0), d.num_queries(), IvfSearchOptions{kK, 2, true, true}, st, outs.data(), tenth);
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    ivf.search(d.query(q), IvfSearchOptions{kK, 2, true, true}, st, &got, tenth);
    ASSERT_EQ(outs[q], got) << "query " << q;
  }
  pool->check_invariants();
}

// Removals (including a whole list emptied) survive flush, pool close and reopen: size,
// verify, contents, and searches never return a removed id.
TEST(IvfRemove, SurvivesAPoolReopen) {
  const Data d = testing::clustered(1500, kDim, 8, 20, 25);
  TempDir dir;
  std::vector<std::vector<uint32_t>> lists;
  std::vector<uint32_t> gone;
  uint64_t rows = 0;
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
    Ivf ivf = Ivf::build(*pool, "ivf", params(), d.rows.data(), d.n);
    for (uint32_t id = 0; id < d.n; id += 3) gone.push_back(id);
    ivf.remove(gone.data(), gone.size());
    lists = contents(ivf);
    rows = ivf.size();
    ASSERT_EQ(rows, d.n - gone.size());
    pool->flush();
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), kTinyPoolFrames));
  Ivf ivf = Ivf::open(*pool, "ivf");
  EXPECT_EQ(ivf.size(), rows);
  EXPECT_EQ(ivf.verify(), rows);
  EXPECT_EQ(contents(ivf), lists);
  IvfSearchState st(ivf);
  std::vector<Neighbor> got;
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    ivf.search(d.query(q), IvfSearchOptions{50, kNlist, true, true}, st, &got);
    ASSERT_EQ(got.size(), 50u);
    for (const Neighbor& n : got) ASSERT_NE(n.id % 3, 0u) << "removed id " << n.id << " returned";
  }
  const uint32_t again = 0;
  expect_invalid("id 0 (element 0) is not in the index", [&] { ivf.remove(&again, 1); });
}

// One thread adds rows (fresh ids), one removes batches of added ids, two search (with
// and without filters, nprobe = nlist, both read modes) on a small pool. Every result must
// be sorted, hold k rows (ids below kKeep are never removed), only ids whose add had
// started and whose removal had not returned before the search started, at their exact
// distance; and, nprobe being nlist, no row certainly present for the whole search (its add
// returned before the search started, its removal started after it ended) may be nearer
// than the last result unless it is in the results.
TEST(IvfRemove, ConcurrentAddsRemovesAndSearches) {
  constexpr uint32_t kBuilt = 800, kAdds = 700, kKeep = 100, kBatch = 8;
  constexpr uint32_t kTotal = kBuilt + kAdds;
  const Data d = testing::clustered(kTotal, kDim, 10, 16, 26);
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(testing::small_options(dir.path(), 24)));
  Ivf ivf = Ivf::build(*pool, "ivf", params(), d.rows.data(), kBuilt);
  std::atomic<uint32_t> add_started{kBuilt}, add_returned{kBuilt};
  std::atomic<uint64_t> clock{1};  // a logical clock: stamps of removals and searches
  std::vector<std::atomic<uint64_t>> remove_started(kTotal), remove_returned(kTotal);
  for (uint32_t i = 0; i < kTotal; ++i) {
    remove_started[i].store(0);
    remove_returned[i].store(0);
  }
  std::atomic<bool> done{false};
  testing::FailureLog fail;
  const vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
  std::thread adder([&] {
    for (uint32_t i = kBuilt; i < kTotal; ++i) {
      add_started.store(i + 1);
      ivf.add(i, d.row(i));
      add_returned.store(i + 1);
    }
  });
  std::thread remover([&] {
    std::mt19937_64 rng(3);
    std::vector<uint32_t> batch;
    for (int round = 0; round < 60; ++round) {
      batch.clear();
      const uint32_t upto = add_returned.load();
      for (int tries = 0; batch.size() < kBatch && tries < 1000; ++tries) {
        const uint32_t id = kKeep + static_cast<uint32_t>(rng() % (upto - kKeep));
        if (remove_started[id].load() == 0 && std::find(batch.begin(), batch.end(), id) == batch.end()) {
          batch.push_back(id);
        }
      }
      for (uint32_t id : batch) remove_started[id].store(clock.fetch_add(1));
      try {
        ivf.remove(batch.data(), batch.size());
      } catch (const Error& e) {
        fail(std::string("remove: ") + e.what());
        return;
      }
      for (uint32_t id : batch) remove_returned[id].store(clock.fetch_add(1));
    }
  });
  auto searcher = [&](int t) {
    IvfSearchState st(ivf);
    std::mt19937_64 rng(100 + t);
    std::vector<Neighbor> got;
    std::vector<uint64_t> allow;
    uint64_t searches = 0;
    while (!done.load() || searches < 20) {
      const float* q = d.query(rng() % d.num_queries());
      const bool filtered = rng() % 2 == 0;
      if (filtered) {
        allow.assign((kTotal + 63) / 64, 0);
        for (uint32_t id = 0; id < kTotal; ++id) {
          if (id < kKeep || rng() % 2 == 0) allow[id / 64] |= uint64_t{1} << (id % 64);  // kKeep: k rows always
        }
      }
      const uint32_t returned_before = add_returned.load();
      const uint64_t start = clock.fetch_add(1);
      const IvfSearchOptions opt{kK, kNlist, searches % 2 == 0, searches % 3 == 0};
      if (filtered) ivf.search(q, opt, st, &got, IdFilter{allow}); else ivf.search(q, opt, st, &got);
      const uint64_t end = clock.fetch_add(1);
      const uint32_t started_by_end = add_started.load();
      ++searches;
      if (got.size() != kK) fail("search returned " + std::to_string(got.size()) + " rows");
      for (size_t i = 0; i < got.size(); ++i) {
        const uint32_t id = got[i].id;
        if (i > 0 && !(got[i - 1] < got[i])) fail("results not sorted and distinct");
        if (id >= started_by_end) {
          fail("id " + std::to_string(id) + " returned before its add started");
          continue;
        }
        const uint64_t r = remove_returned[id].load();
        if (r != 0 && r < start) fail("id " + std::to_string(id) + " returned after its removal returned");
        if (filtered && !IdFilter{allow}.allows(id)) fail("id " + std::to_string(id) + " is filtered out");
        if (got[i].distance != dist(q, d.row(id), kDim)) fail("id " + std::to_string(id) + ": wrong distance");
      }
      if (got.empty()) continue;
      for (uint32_t id = 0; id < returned_before; ++id) {  // certainly present: must not be missed
        const uint64_t s = remove_started[id].load();
        if (s != 0 && s < end) continue;
        if (filtered && !IdFilter{allow}.allows(id)) continue;
        const Neighbor c{dist(q, d.row(id), kDim), id};
        if (c < got.back() && std::find(got.begin(), got.end(), c) == got.end()) {
          fail("row " + std::to_string(id) + " was present throughout the search and nearer than its results");
        }
      }
    }
  };
  std::thread s1(searcher, 1), s2(searcher, 2);
  adder.join();
  remover.join();
  done.store(true);
  s1.join();
  s2.join();
  EXPECT_EQ(fail.count(), 0u) << fail.first();
  uint64_t removed = 0;
  for (uint32_t i = 0; i < kTotal; ++i) removed += remove_returned[i].load() != 0 ? 1 : 0;
  EXPECT_GT(removed, 300u);
  EXPECT_EQ(ivf.size(), kTotal - removed);
  EXPECT_EQ(ivf.verify(), kTotal - removed);
  std::vector<uint32_t> ids;
  for (uint32_t l = 0; l < ivf.nlist(); ++l) {
    ivf.list_ids(l, &ids);
    for (uint32_t id : ids) ASSERT_EQ(remove_returned[id].load(), 0u) << "removed id " << id << " still stored";
  }
  pool->check_invariants();
}

}  // namespace
}  // namespace calico
