// The id map and the mapped indexes (include/calico/index/id_map.h,
// include/calico/index/mapped_index.h), for HNSW and IVF with one test body each: a model
// (std::map id -> vector, brute-force top-k) under random interleavings of add, upsert,
// delete (good and rejected batches) and filtered and unfiltered search, on pools far
// smaller than the index, on every evicting translation, with check_structure after each
// phase and a reopen; upserts racing exact searches never hide an id (the grace period of
// "Upserts and searches"); bad input changes nothing; ids = None never overwrites; indexes
// written before the map are migrated (and an interrupted migration redone); consolidate's
// freed slots are reused; automatic consolidation bounds the tombstones under churn, alone
// and with concurrent upserts and searches.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/mapped_index.h"
#include "support/mapped_kinds.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "support/vector_data.h"

namespace calico {
namespace {

using index::AddMode;
using index::BasicMapped;
using index::MappedNeighbor;
using testing::Data;
using testing::TempDir;
using testing::mapped::HnswKind;
using testing::mapped::IvfKind;
using testing::mapped::kDim;
using vector::Metric;

constexpr uint32_t kK = 10;
constexpr uint64_t kNoId = UINT64_MAX;
constexpr bool kSlow = testing::kThreadSanitizer || testing::kAddressSanitizer;

// The model: each id's current vector.
struct Model {
  std::map<uint64_t, const float*> rows;
  vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);

  std::vector<MappedNeighbor> exact(const float* q, const std::vector<uint64_t>* allow, uint32_t k) const {
    std::vector<MappedNeighbor> all;
    for (const auto& [id, v] : rows) {
      if (!allow || std::find(allow->begin(), allow->end(), id) != allow->end()) all.push_back({dist(q, v, kDim), id});
    }
    std::sort(all.begin(), all.end());
    if (all.size() > k) all.resize(k);
    return all;
  }
};

// Every result is a present (allowed) id at the distance of its current vector, each id
// once, sorted; and there are min(k, allowed) of them.
void expect_admissible(const Model& m, const float* q, const std::vector<uint64_t>* allow,
                       const std::vector<MappedNeighbor>& got, const std::string& at) {
  const size_t want = m.exact(q, allow, UINT32_MAX).size();
  ASSERT_EQ(got.size(), std::min<size_t>(kK, want)) << at;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto it = m.rows.find(got[i].id);
    ASSERT_NE(it, m.rows.end()) << at << ": id " << got[i].id << " is not in the index";
    ASSERT_EQ(got[i].distance, m.dist(q, it->second, kDim)) << at << ": id " << got[i].id << " with a stale vector";
    if (allow) {
      ASSERT_NE(std::find(allow->begin(), allow->end(), got[i].id), allow->end()) << at;
    }
  }
  testing::mapped::expect_distinct_sorted(got, at);
}

template <class Fn>
void expect_invalid(const std::string& part, Fn&& fn) {
  const Error e = testing::expect_error(ErrorCode::kInvalidArgument, fn);
  EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
}

// A random id: small, near 2^32, or anywhere below 2^64 - 1.
uint64_t random_id(std::mt19937_64& rng) {
  switch (rng() % 3) {
    case 0: return rng() % 5000;
    case 1: return (uint64_t{1} << 32) - 50 + rng() % 100;
    default: return rng() % (kNoId - 1);
  }
}

// Phases of random steps on a tiny pool: add a new id (30%), upsert a present id (20%),
// delete a batch of 1-3 present ids (12%), a rejected delete (unknown or repeated id: 5%),
// search (33%: no filter, or an allow-list of 1, a few, or half the ids, some unknown).
// After each phase check_structure() and size(); after phase 1 the pool is reopened.
template <class Kind, class Pool>
void model_test(uint32_t frames) {
  using Mapped = typename Kind::Mapped;
  const uint64_t n = kSlow ? 500 : 1500;
  const Data d = testing::clustered(n, kDim, 8, 40, 31);
  TempDir dir;
  auto opts = testing::pool_options<Pool>(dir.path(), frames);
  auto pool = Pool::open(opts);
  auto x = std::make_unique<Mapped>(Mapped::attach(*pool, "v", Kind::create(*pool, "v", d)));
  auto st = std::make_unique<typename Mapped::State>(*x);
  Model m;
  std::mt19937_64 rng(1234);
  uint64_t next_row = 0, upserts = 0, rejected = 0, searches = 0, hits = 0, wanted = 0;
  std::vector<MappedNeighbor> got;
  auto some_id = [&] {
    auto it = m.rows.begin();
    std::advance(it, rng() % m.rows.size());
    return it->first;
  };
  const int steps = kSlow ? 120 : 300;
  for (int phase = 0; phase < 4; ++phase) {
    for (int step = 0; step < steps && next_row < n; ++step) {
      const std::string at = "phase " + std::to_string(phase) + " step " + std::to_string(step);
      const uint32_t dice = rng() % 100;
      if (dice < 30 || m.rows.size() < 2 * kK) {
        uint64_t id = random_id(rng);
        while (m.rows.count(id)) id = random_id(rng);
        x->add(id, d.row(next_row));
        m.rows[id] = d.row(next_row++);
      } else if (dice < 50) {
        const uint64_t id = some_id();
        x->add(id, d.row(next_row));
        m.rows[id] = d.row(next_row++);
        ++upserts;
      } else if (dice < 62) {
        std::vector<uint64_t> batch;
        for (uint32_t i = 0, want = 1 + rng() % 3; batch.size() < want && i < 20; ++i) {
          const uint64_t id = some_id();
          if (std::find(batch.begin(), batch.end(), id) == batch.end()) batch.push_back(id);
        }
        x->remove(batch);
        for (uint64_t id : batch) m.rows.erase(id);
      } else if (dice < 67) {
        std::vector<uint64_t> batch{some_id(), some_id()};
        if (batch[0] == batch[1]) batch.pop_back();
        const uint64_t bad = rng() % 2 ? kNoId : uint64_t{1} << 63 | rng();
        batch.insert(batch.begin() + 1, bad);
        if (m.rows.count(bad)) continue;
        expect_invalid("id " + std::to_string(bad) + " (element 1) is not in the index", [&] { x->remove(batch); });
        ASSERT_EQ(x->size(), m.rows.size()) << at;
        for (uint64_t id : batch) ASSERT_EQ(x->contains(id), id != bad) << at << ": a rejected batch removed " << id;
        ++rejected;
      } else {
        const float* q = d.query(rng() % d.num_queries());
        const uint32_t f = rng() % 4;
        std::vector<uint64_t> allow;
        if (f == 1) allow = {some_id()};
        if (f == 2) allow = {some_id(), some_id(), random_id(rng), some_id(), kNoId};
        if (f == 3) {
          for (const auto& [id, v] : m.rows) {
            if (rng() % 2) allow.push_back(id);
          }
        }
        const std::vector<uint64_t>* a = f == 0 ? nullptr : &allow;
        if (a) {
          const index::SlotFilter filter = x->filter(allow);
          x->search(q, Kind::options(kK), *st, &got, filter);
        } else {
          x->search(q, Kind::options(kK), *st, &got);
        }
        expect_admissible(m, q, a, got, at + " filter " + std::to_string(f));
        if (::testing::Test::HasFatalFailure()) return;
        const std::vector<MappedNeighbor> exact = m.exact(q, a, kK);
        if (Kind::kExact) {
          ASSERT_EQ(got, exact) << at;
        }
        for (const MappedNeighbor& e : exact) hits += std::count(got.begin(), got.end(), e);
        wanted += exact.size();
        ++searches;
      }
    }
    ASSERT_EQ(x->size(), m.rows.size()) << "phase " << phase;
    ASSERT_EQ(x->check_structure(), m.rows.size()) << "phase " << phase;
    if (phase == 1) {  // everything survives a flush and a reopen
      testing::mapped::reopen<Kind>(opts, pool, x, st);
      ASSERT_EQ(x->size(), m.rows.size());
      ASSERT_EQ(x->check_structure(), m.rows.size());
      for (const auto& [id, v] : m.rows) ASSERT_TRUE(x->contains(id)) << id;
    }
  }
  EXPECT_GT(upserts, 20u);
  EXPECT_GT(rejected, 3u);
  EXPECT_GT(searches, 50u);
  EXPECT_GE(static_cast<double>(hits) / static_cast<double>(wanted), 0.9) << "recall";
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
}

template <class Pool>
class IdMapOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(IdMapOnEveryTranslation, testing::IndexPools, testing::PoolName);

TYPED_TEST(IdMapOnEveryTranslation, HnswModelOfUpsertDeleteAndFilteredSearch) {
  model_test<HnswKind<TypeParam>, TypeParam>(24);
}
TYPED_TEST(IdMapOnEveryTranslation, IvfModelOfUpsertDeleteAndFilteredSearch) {
  model_test<IvfKind<TypeParam>, TypeParam>(16);
}

// Writers upsert the ids 0..kIds-1 over and over (each writer its own ids) and delete and
// re-add one of them, while readers search with allow-lists: one id (it must always be
// found: an upsert never hides its id), or every id with k = kIds (every present id exactly
// once). Unfiltered searches never return an id twice. Then the structure and each id's
// last vector are checked.
template <class Kind>
void concurrent_test() {
  using Mapped = typename Kind::Mapped;
  constexpr uint64_t kIds = 24;
  const int rounds = kSlow ? 6 : 25;
  constexpr unsigned kWriters = 2, kReaders = 2;
  // Writers go on past `rounds` (up to 4x) until the readers searched this often meanwhile.
  constexpr uint64_t kMinSearches = 20;
  const int max_rounds = 4 * rounds;
  const Data d = testing::clustered(kIds * (max_rounds + 2) * kWriters + 400, kDim, 6, 20, 41);
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(testing::small_options(dir.path(), 64)));
  Mapped x = Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> ids(kIds);
  for (uint64_t i = 0; i < kIds; ++i) ids[i] = (i << 40) + 7;  // far from slot numbers
  x.add(ids, d.row(0));
  std::atomic<unsigned> writers_done{0};
  std::atomic<uint64_t> searches{0};
  std::vector<std::vector<uint64_t>> last_row(kWriters, std::vector<uint64_t>(kIds, 0));
  for (uint64_t i = 0; i < kIds; ++i) last_row[0][i] = i;
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      uint64_t row = 400 + w * kIds * (max_rounds + 2);
      // Not before a reader has searched: on a loaded machine the readers may otherwise be
      // scheduled only after every round is done, and nothing ran concurrently.
      while (searches.load() == 0) std::this_thread::yield();
      for (int r = 0; r < max_rounds && (r < rounds || searches.load() < kMinSearches); ++r) {
        for (uint64_t i = w; i < kIds; i += kWriters) {
          x.add(ids[i], d.row(row));
          last_row[w][i] = row++;
        }
      }
      writers_done.fetch_add(1);
    });
  }
  std::atomic<int> failures{0};
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      typename Mapped::State st(x);
      std::vector<MappedNeighbor> got;
      std::mt19937_64 rng(r);
      while (writers_done.load() < kWriters && failures.load() == 0) {
        const float* q = d.query(rng() % d.num_queries());
        const uint64_t one = ids[rng() % kIds];
        {
          const index::SlotFilter f = x.filter(std::span<const uint64_t>(&one, 1));
          x.search(q, Kind::options(1), st, &got, f);
          if (got.size() != 1 || got[0].id != one) failures.fetch_add(1);
        }
        {
          const index::SlotFilter f = x.filter(ids);
          x.search(q, Kind::options(kIds), st, &got, f);
          std::vector<uint64_t> seen;
          for (const auto& g : got) seen.push_back(g.id);
          std::sort(seen.begin(), seen.end());
          if (seen != ids) failures.fetch_add(1);
        }
        x.search(q, Kind::options(kK), st, &got);
        for (size_t i = 0; i < got.size(); ++i) {
          for (size_t j = 0; j < i; ++j) {
            if (got[i].id == got[j].id) failures.fetch_add(1);
          }
        }
        searches.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << "a search missed an upserted id or returned one twice";
  EXPECT_GT(searches.load(), 0u);
  EXPECT_EQ(x.size(), kIds);
  EXPECT_EQ(x.check_structure(), kIds);
  // Each id has its last vector: its exact search with it as the query finds it at 0.
  typename Mapped::State st(x);
  std::vector<MappedNeighbor> got;
  for (uint64_t i = 0; i < kIds; ++i) {
    const uint64_t row = last_row[i % kWriters][i];
    const index::SlotFilter f = x.filter(std::span<const uint64_t>(&ids[i], 1));
    x.search(d.row(row), Kind::options(1), st, &got, f);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].id, ids[i]);
    EXPECT_EQ(got[0].distance, 0.0f) << "id " << ids[i] << " has a stale vector";
  }
}

TEST(IdMapConcurrent, HnswUpsertsNeverHideAnId) { concurrent_test<HnswKind<BufferPool>>(); }
TEST(IdMapConcurrent, IvfUpsertsNeverHideAnId) { concurrent_test<IvfKind<BufferPool>>(); }

// Bad batches change nothing: kNoId, an id twice, a NaN row (add); an unknown id anywhere,
// an id twice, kNoId (delete). An upsert with a bad vector keeps the old one.
template <class Kind>
void bad_input_test() {
  using Mapped = typename Kind::Mapped;
  const Data d = testing::clustered(600, kDim, 4, 10, 51);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
  Mapped x = Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 100; ++i) ids.push_back(i * 1000003 + (uint64_t{1} << 50));
  x.add(ids, d.row(0));
  typename Mapped::State st(x);
  auto answers = [&] {
    std::vector<std::vector<MappedNeighbor>> out(d.num_queries());
    for (uint64_t q = 0; q < d.num_queries(); ++q) x.search(d.query(q), Kind::options(kK), st, &out[q]);
    return out;
  };
  const auto before = answers();
  const uint32_t end = x.map().slot_end();
  auto expect_unchanged = [&](const std::string& what) {
    EXPECT_EQ(x.size(), 100u) << what;
    EXPECT_EQ(x.check_structure(), 100u) << what;
    EXPECT_EQ(answers(), before) << what;
  };
  std::vector<float> rows(3 * kDim, 1.0f);
  std::vector<uint64_t> b{5, kNoId, 6};
  expect_invalid("id 18446744073709551615 (row 1) is 2^64 - 1", [&] { x.add(b, rows.data()); });
  b = {5, 6, 5};
  expect_invalid("id 5 (row 2) is given twice", [&] { x.add(b, rows.data()); });
  rows[kDim + 3] = std::nanf("");
  b = {ids[0], 7, 8};  // an upsert, a new id, and a NaN row after it
  expect_invalid("id 7 (row 1): the vector holds NaN", [&] { x.add(b, rows.data()); });
  EXPECT_EQ(x.map().slot_end(), end) << "a rejected batch took no slot";
  expect_unchanged("rejected adds");
  b = {ids[3], 42, ids[4]};
  expect_invalid("id 42 (element 1) is not in the index", [&] { x.remove(b); });
  b = {ids[3], ids[4], 99};
  expect_invalid("id 99 (element 2) is not in the index", [&] { x.remove(b); });
  b = {ids[3], ids[4], ids[3]};
  expect_invalid("id " + std::to_string(ids[3]) + " (element 2) is given twice", [&] { x.remove(b); });
  b = {kNoId};
  expect_invalid("(element 0) is not in the index", [&] { x.remove(b); });
  expect_unchanged("rejected deletes");
  b = {ids[3], ids[4]};
  x.remove(b);
  EXPECT_EQ(x.size(), 98u);
  EXPECT_FALSE(x.contains(ids[3]));
  EXPECT_EQ(x.check_structure(), 98u);
}

TEST(IdMapBadInput, HnswChangesNothing) { bad_input_test<HnswKind<BufferPool>>(); }
TEST(IdMapBadInput, IvfChangesNothing) { bad_input_test<IvfKind<BufferPool>>(); }

// ids = None: the first ids from size() up that are not present; a user id in that range is
// skipped, never overwritten; AddMode::kInsert refuses a present id.
TEST(IdMapNumbering, SkipsIdsUsersChose) {
  using Kind = HnswKind<BufferPool>;
  const Data d = testing::clustered(100, kDim, 4, 4, 61);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> mine{2, 3};
  x.add(mine, d.row(0));
  EXPECT_EQ(x.add_numbered(d.row(2), 3), (std::vector<uint64_t>{4, 5, 6}));  // size() = 2: 2, 3 taken
  EXPECT_EQ(x.add_numbered(d.row(5), 2), (std::vector<uint64_t>{7, 8}));
  Kind::Mapped::State st(x);
  std::vector<MappedNeighbor> got;
  const index::SlotFilter f = x.filter(mine);
  x.search(d.row(0), Kind::options(2), st, &got, f);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, 2u);
  EXPECT_EQ(got[0].distance, 0.0f) << "id 2 keeps its vector";
  expect_invalid("id 3 is in the index (insert only)",
                 [&] { x.add(std::span<const uint64_t>(&mine[1], 1), d.row(50), 1, AddMode::kInsert); });
  EXPECT_EQ(x.check_structure(), 7u);
}

// An index written before the map (the bare index, ids = slots, some removed; IVF with a
// repeated id) opens with its ids (identity) after attach; searches return what the bare
// index returned; upsert and delete work; the map persists (a second attach opens it). A
// map whose migration did not finish (kMigrating) is rebuilt.
template <class Kind>
void legacy_test() {
  using Mapped = typename Kind::Mapped;
  using Map = index::BasicIdMap<BufferPool>;
  const Data d = testing::clustered(700, kDim, 4, 10, 71);
  TempDir dir;
  auto opts = testing::small_options(dir.path(), 32);
  // The bare index's answers (IVF: k = 20, deduplicated by id, as id 7 has two rows), first k.
  std::vector<std::vector<MappedNeighbor>> bare(d.num_queries());
  {
    auto pool = BufferPool::open(opts);
    auto x = Kind::create(*pool, "old", d);
    for (uint32_t i = 0; i < 300; ++i) Kind::add_legacy(x, i, d.row(i));
    if constexpr (Kind::kExact) Kind::add_legacy(x, 7, d.row(300));
    for (uint32_t i = 0; i < 300; i += 10) Kind::remove_legacy(x, i);
    typename index::MappedCore<typename Kind::Index>::State cst(x);
    std::vector<vector::Neighbor> core;
    for (uint64_t q = 0; q < d.num_queries(); ++q) {
      x.search(d.query(q), Kind::options(Kind::kExact ? 2 * kK : kK), cst, &core);
      for (const vector::Neighbor& n : core) {
        if (bare[q].size() < kK && std::none_of(bare[q].begin(), bare[q].end(),
                                                [&](const MappedNeighbor& b) { return b.id == n.id; })) {
          bare[q].push_back({n.distance, n.id});
        }
      }
    }
    pool->flush();
  }
  auto pool = BufferPool::open(opts);
  EXPECT_FALSE(Map::exists(*pool, "old"));
  {
    // A migration interrupted after a wrong binding: the map is left kMigrating.
    Map m = Map::create(*pool, "old");
    m.allocate_slot(100);
    m.set_id(0, 12345);
    m.bind(12345, 0);
  }
  auto x = std::make_unique<Mapped>(Mapped::attach(*pool, "old", Kind::open(*pool, "old")));
  EXPECT_FALSE(x->contains(12345)) << "the interrupted migration was redone";
  EXPECT_EQ(x->size(), Kind::kExact ? 271u : 270u);  // IVF counts rows
  EXPECT_EQ(x->check_structure(), 270u);
  for (uint32_t i = 0; i < 300; ++i) EXPECT_EQ(x->contains(i), i % 10 != 0) << i;
  typename Mapped::State st(*x);
  std::vector<MappedNeighbor> got;
  for (uint64_t q = 0; q < d.num_queries(); ++q) {
    x->search(d.query(q), Kind::options(kK), st, &got);
    EXPECT_EQ(got, bare[q]) << "query " << q << ": the ids the index had";
  }
  // Upsert and delete migrated ids (id 7's rows go together), reopen: the map is kept, not
  // migrated again (which would bind id 5's new slot to itself).
  x->add(5, d.row(400));
  uint32_t slot5 = 0;
  ASSERT_TRUE(x->map().slot_of(5, &slot5));
  EXPECT_NE(slot5, 5u);
  const uint64_t gone[] = {7, 11};
  x->remove(gone);
  EXPECT_EQ(x->size(), 268u);
  EXPECT_EQ(x->check_structure(), 268u);
  x->sync();
  pool->flush();
  x.reset();
  pool.reset();
  pool = BufferPool::open(opts);
  x = std::make_unique<Mapped>(Mapped::attach(*pool, "old", Kind::open(*pool, "old")));
  EXPECT_EQ(x->check_structure(), 268u);
  EXPECT_TRUE(x->contains(5));
  EXPECT_FALSE(x->contains(slot5));
  EXPECT_FALSE(x->contains(7));
}

TEST(IdMapLegacy, HnswIndexWithoutMapIsMigrated) { legacy_test<HnswKind<BufferPool>>(); }
TEST(IdMapLegacy, IvfIndexWithoutMapIsMigrated) { legacy_test<IvfKind<BufferPool>>(); }

// A reopen resumes handing out slots above the persisted high-water mark (reserved_slots),
// which is bumped a chunk at a time and may reach past the slot array's last page; slot_end()
// stops at that page, so the scans up to it (refill_free after consolidate, check_structure)
// read no page that does not exist. Before, they failed with kPageOutOfRange after the
// reopen (found by tests/index/vector_crash_test.cc).
TEST(IdMapReopen, SlotEndStopsAtTheArraysLastPage) {
  using Kind = HnswKind<BufferPool>;
  using Map = index::BasicIdMap<BufferPool>;
  TempDir dir;
  const PoolOptions opts = testing::small_options(dir.path(), 32);
  auto pool = BufferPool::open(opts);
  const uint64_t per_page = pool->usable_page_size() / 8;
  // The last slot handed out starts a chunk that ends past the first array page.
  const uint64_t n = per_page / Map::kReserveChunk * Map::kReserveChunk + 1;
  ASSERT_GT(n - 1 + Map::kReserveChunk, per_page);
  const Data d = testing::clustered(static_cast<uint32_t>(n + 100), kDim, 4, 10, 83);
  std::vector<uint64_t> ids(n + 100);
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + i;
  {
    Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
    x.add(std::span<const uint64_t>(ids.data(), n), d.row(0));
    const uint64_t gone[] = {1000, 1001};
    x.remove(gone);
    x.sync();
    pool->flush();
  }
  pool.reset();
  pool = BufferPool::open(opts);
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::open(*pool, "v"));
  EXPECT_LE(x.map().slot_end(), per_page) << "one array page: no slot past it was handed out";
  EXPECT_EQ(x.check_structure(), n - 2);
  EXPECT_EQ(x.consolidate(), 2u);
  x.add(std::span<const uint64_t>(ids.data() + n, 100), d.row(n));
  EXPECT_EQ(x.check_structure(), n + 98);
}

// A map whose slots space has no block was created and never flushed (a crash between
// create_space and the first flush names the space in the catalog with 0 blocks): attach
// builds the map again from the index, as for an index without one. Before, attach failed
// with kInvalidArgument ("not an id map (empty)") and the index could not be opened.
TEST(IdMapReopen, AMapNeverFlushedIsRebuilt) {
  using Kind = HnswKind<BufferPool>;
  using Map = index::BasicIdMap<BufferPool>;
  TempDir dir;
  const PoolOptions opts = testing::small_options(dir.path(), 32);
  const Data d = testing::clustered(200, kDim, 4, 10, 89);
  {
    auto pool = BufferPool::open(opts);
    auto x = Kind::create(*pool, "v", d);
    for (uint32_t i = 0; i < 200; ++i) Kind::add_legacy(x, i, d.row(i));
    pool->flush();
  }
  auto pool = BufferPool::open(opts);
  pool->create_space(Map::slots_space("v"));  // the crash's leftover: no block
  EXPECT_FALSE(Map::exists(*pool, "v"));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::open(*pool, "v"));
  EXPECT_EQ(x.check_structure(), 200u);
  for (uint64_t i = 0; i < 200; i += 37) EXPECT_TRUE(x.contains(i)) << i;
}

// Upserting every id again and again grows the slots only until consolidate() frees the
// replaced ones, which later adds reuse.
TEST(IdMapConsolidate, FreedSlotsAreReused) {
  using Kind = HnswKind<BufferPool>;
  const Data d = testing::clustered(1000, kDim, 4, 10, 81);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 200; ++i) ids.push_back(~uint64_t{0} - 1 - i * 7);  // the largest ids
  x.add(ids, d.row(0));
  x.add(ids, d.row(200));
  const uint32_t end = x.map().slot_end();
  EXPECT_GE(end, 400u);
  EXPECT_EQ(x.consolidate(), 200u);
  x.add(ids, d.row(400), 2);
  EXPECT_EQ(x.map().slot_end(), end) << "the freed slots were reused";
  EXPECT_EQ(x.check_structure(), 200u);
  Kind::Mapped::State st(x);
  std::vector<MappedNeighbor> got;
  for (uint64_t i = 0; i < 200; i += 17) {
    const index::SlotFilter f = x.filter(std::span<const uint64_t>(&ids[i], 1));
    x.search(d.row(400 + i), Kind::options(1), st, &got, f);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].distance, 0.0f) << "id " << ids[i] << " has its last vector";
  }
}

// HNSW's search_batch through the map equals search() per query, with upserted ids (whose
// old slots are tombstones the searches pass through).
TEST(IdMapSearchBatch, EqualsSearchPerQuery) {
  using Kind = HnswKind<BufferPool>;
  const Data d = testing::clustered(900, kDim, 6, 24, 91);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 48));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 600; ++i) ids.push_back(i * 0x9E3779B97F4A7C15ull % (kNoId - 1));
  x.add(ids, d.row(0), 2);
  x.add(std::span<const uint64_t>(ids.data(), 200), d.row(600));  // upserts
  std::vector<const float*> qs;
  for (uint64_t q = 0; q < d.num_queries(); ++q) qs.push_back(d.query(q));
  std::vector<std::unique_ptr<Kind::Mapped::State>> owned;
  std::vector<Kind::Mapped::State*> states;
  for (size_t i = 0; i < qs.size(); ++i) {
    owned.push_back(std::make_unique<Kind::Mapped::State>(x));
    states.push_back(owned.back().get());
  }
  std::vector<std::vector<MappedNeighbor>> batch(qs.size());
  x.search_batch(qs, Kind::options(kK), states, batch);
  Kind::Mapped::State st(x);
  std::vector<MappedNeighbor> one;
  for (size_t q = 0; q < qs.size(); ++q) {
    x.search(qs[q], Kind::options(kK), st, &one);
    EXPECT_EQ(batch[q], one) << "query " << q;
    EXPECT_EQ(one.size(), kK);
  }
}

// Every id of `m` has exactly its model vector: a filtered search for it alone finds it at
// distance 0 (an exact scan: the filter allows one slot).
template <class Mapped, class Model>
void expect_model(const Mapped& x, const Model& m, const Data& d) {
  typename Mapped::State st(x);
  std::vector<MappedNeighbor> got;
  for (const auto& [id, row] : m) {
    const index::SlotFilter f = x.filter(std::span<const uint64_t>(&id, 1));
    x.search(d.row(row), HnswKind<BufferPool>::options(1), st, &got, f);
    ASSERT_EQ(got.size(), 1u) << "id " << id;
    EXPECT_EQ(got[0].id, id);
    EXPECT_EQ(got[0].distance, 0.0f) << "id " << id << " has its last vector";
  }
}

// Churn in rounds (delete 10%, insert 10% new, upsert 10%) with automatic consolidation:
// tombstones never pass the threshold after a call returns, the slots stop growing (freed
// slots are reused), every id keeps its last vector; deletes alone trigger it too. Off
// (fraction 0), the same churn keeps every tombstone and grows the slots.
TEST(IdMapAutoConsolidate, ChurnKeepsTombstonesBoundedAndSlotsReused) {
  using Kind = HnswKind<BufferPool>;
  constexpr uint64_t kRows = 400, kMin = 40;
  constexpr double kFraction = 0.2;
  const int rounds = kSlow ? 4 : 8;
  const Data d = testing::clustered(kRows * (2 + 2 * 8), kDim, 6, 10, 97);
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "auto on" : "auto off");
    TempDir dir;
    auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
    Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
    EXPECT_EQ(x.auto_consolidate_fraction(), Kind::Mapped::kAutoFraction) << "on by default";
    x.set_auto_consolidate(on ? kFraction : 0.0, kMin);
    std::map<uint64_t, uint64_t> model;  // id -> row of d
    std::mt19937_64 rng(5);
    uint64_t next_row = 0, next_id = 1000;
    auto add = [&](std::vector<uint64_t> ids) {
      std::vector<float> rows;
      for (const uint64_t id : ids) {
        rows.insert(rows.end(), d.row(next_row), d.row(next_row) + kDim);
        model[id] = next_row++;
      }
      x.add(ids, rows.data());
    };
    std::vector<uint64_t> first;
    for (uint64_t i = 0; i < kRows; ++i) first.push_back(next_id++);
    add(first);
    uint32_t max_end = 0;
    for (int r = 0; r < rounds; ++r) {
      std::vector<uint64_t> present;
      for (const auto& [id, row] : model) present.push_back(id);
      std::shuffle(present.begin(), present.end(), rng);
      const size_t tenth = present.size() / 10;
      std::vector<uint64_t> gone(present.begin(), present.begin() + tenth);
      x.remove(gone);
      for (const uint64_t id : gone) model.erase(id);
      std::vector<uint64_t> fresh, again(present.begin() + tenth, present.begin() + 2 * tenth);
      for (size_t i = 0; i < tenth; ++i) fresh.push_back(next_id++);
      add(fresh);
      add(again);  // upserts: their old slots become tombstones
      if (on) {
        EXPECT_LT(x.tombstones(), std::max<double>(kMin, kFraction * x.size())) << "round " << r;
      }
      max_end = std::max(max_end, x.map().slot_end());
      ASSERT_EQ(x.check_structure(), model.size()) << "round " << r;
    }
    expect_model(x, model, d);
    // Rows ever added: kRows + 2 x rounds x tenth; with consolidation the slots stay within
    // the live rows plus one threshold's worth of tombstones plus one call's rows (and the
    // map's reserve chunk); without it they grow with every add.
    const uint64_t ever = next_row;
    if (on) {
      EXPECT_LE(max_end, kRows + kFraction * kRows + 2 * kRows / 10 + Kind::Mapped::Map::kReserveChunk);
    } else {
      EXPECT_GE(max_end, ever) << "no slot was freed";
      EXPECT_EQ(x.tombstones(), ever - model.size());
    }
    // Deletes alone: a quarter of the rows removed at once is past the threshold.
    std::vector<uint64_t> quarter;
    for (const auto& [id, row] : model) {
      if (quarter.size() < model.size() / 4) quarter.push_back(id);
    }
    x.remove(quarter);
    for (const uint64_t id : quarter) model.erase(id);
    if (on) {
      EXPECT_EQ(x.tombstones(), 0u) << "the delete consolidated";
    }
    ASSERT_EQ(x.check_structure(), model.size());
    expect_model(x, model, d);
  }
}

// After a reopen, tombstones() starts from the slots handed out and not bound (an upper
// bound), and the first due call consolidates and makes it exact.
TEST(IdMapAutoConsolidate, ReopenCountsUnboundSlots) {
  using Kind = HnswKind<BufferPool>;
  const Data d = testing::clustered(600, kDim, 4, 10, 98);
  TempDir dir;
  const PoolOptions opts = testing::small_options(dir.path(), 32);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 300; ++i) ids.push_back(i * 3 + 1);
  {
    auto pool = BufferPool::open(opts);
    Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
    x.set_auto_consolidate(0.0);
    x.add(ids, d.row(0));
    x.remove(std::span<const uint64_t>(ids.data(), 100));
    EXPECT_EQ(x.tombstones(), 100u);
    x.sync();
    pool->flush();
  }
  auto pool = BufferPool::open(opts);
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::open(*pool, "v"));
  EXPECT_GE(x.tombstones(), 100u);
  EXPECT_LE(x.tombstones(), 100u + Kind::Mapped::Map::kReserveChunk);
  x.set_auto_consolidate(0.2, 10);
  x.remove(std::span<const uint64_t>(&ids[100], 1));
  EXPECT_EQ(x.tombstones(), 0u);
  EXPECT_EQ(x.check_structure(), 199u);
}

TEST(IdMapAutoConsolidate, BadFractionIsRejected) {
  using Kind = HnswKind<BufferPool>;
  const Data d = testing::clustered(100, kDim, 2, 2, 99);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  for (const double bad : {-0.1, std::nan(""), HUGE_VAL}) {
    try {
      x.set_auto_consolidate(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("fraction"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(x.auto_consolidate_fraction(), Kind::Mapped::kAutoFraction) << "unchanged";
}

// Writers upsert and delete (each id owned by one writer, so it knows the id's last vector)
// with a low threshold, so that automatic consolidations run while searchers search:
// every search returns distinct ids of the id universe, sorted; at the end every present id
// has its last vector and the structure holds.
TEST(IdMapAutoConsolidate, ConcurrentChurnAndSearches) {
  using Kind = HnswKind<BufferPool>;
  constexpr unsigned kWriters = 2, kReaders = 1;
  constexpr uint64_t kIds = 120;
  const int rounds = kSlow ? 6 : 15;
  const Data d = testing::clustered(kIds * (rounds + 2) + 200, kDim, 6, 20, 43);
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(testing::small_options(dir.path(), 64)));
  Kind::Mapped x = Kind::Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  x.set_auto_consolidate(0.1, 8);
  std::vector<uint64_t> ids(kIds);
  for (uint64_t i = 0; i < kIds; ++i) ids[i] = (i << 33) + 11;
  x.add(ids, d.row(0));
  std::vector<std::map<uint64_t, uint64_t>> models(kWriters);  // writer w's ids -> row
  for (uint64_t i = 0; i < kIds; ++i) models[i % kWriters][ids[i]] = i;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<uint64_t> next_row{kIds};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      auto& m = models[w];
      for (int r = 0; r < rounds; ++r) {
        for (uint64_t i = w; i < kIds; i += kWriters) {
          const uint64_t id = ids[i];
          if (m.count(id) && rng() % 4 == 0) {
            x.remove(std::span<const uint64_t>(&id, 1));
            m.erase(id);
          } else {
            const uint64_t row = next_row.fetch_add(1);
            x.add(id, d.row(row));
            m[id] = row;
          }
        }
      }
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      Kind::Mapped::State st(x);
      std::vector<MappedNeighbor> got;
      for (uint64_t q = 0; !done.load(); q = (q + 1) % d.num_queries()) {
        x.search(d.query(q), Kind::options(kK), st, &got);
        std::vector<uint64_t> seen;
        for (size_t j = 0; j < got.size(); ++j) {
          seen.push_back(got[j].id);
          if ((got[j].id - 11) % (uint64_t{1} << 33) != 0 || (got[j].id >> 33) >= kIds) failures.fetch_add(1);
          if (j > 0 && got[j] < got[j - 1]) failures.fetch_add(1);
        }
        std::sort(seen.begin(), seen.end());
        if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) failures.fetch_add(1);
      }
    });
  }
  for (unsigned w = 0; w < kWriters; ++w) threads[w].join();
  done.store(true);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  std::map<uint64_t, uint64_t> all;
  for (const auto& m : models) all.insert(m.begin(), m.end());
  ASSERT_EQ(x.check_structure(), all.size());
  EXPECT_LT(x.tombstones(), std::max<double>(8, 0.1 * x.size()) + kWriters) << "bounded after the last call";
  EXPECT_LE(x.map().slot_end(), kIds * 2 + Kind::Mapped::Map::kReserveChunk) << "freed slots were reused";
  expect_model(x, all, d);
}

}  // namespace
}  // namespace calico
