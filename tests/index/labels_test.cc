// Labels of the mapped indexes (include/calico/index/mapped_index.h, "Labels";
// include/calico/index/id_map.h, "Labels"), for HNSW and IVF with one test body each: a
// model (std::map id -> (vector, label), brute-force top-k among the rows of the asked
// labels) under random interleavings of labeled add, upsert with a changing (or dropped)
// label, delete and label-filtered search at selectivities from ~1% to ~50% (and combined
// with an allow-list), on a pool far smaller than the index, with check_structure ((L1) and
// (L2) included) after each phase and a flush + reopen; bad labels change nothing; the
// label space appears only with the first label; and a stress test of writers relabeling
// while searchers filter by label, bounded by CALICO_STRESS_SECONDS.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/mapped_index.h"
#include "support/mapped_kinds.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "support/vector_data.h"

#ifndef CALICO_STRESS_SECONDS
#define CALICO_STRESS_SECONDS 8
#endif

namespace calico {
namespace {

using index::AddMode;
using index::MappedNeighbor;
using testing::Data;
using testing::TempDir;
using vector::Metric;
using namespace testing::mapped;  // HnswKind, IvfKind, kDim, reopen, expect_distinct_sorted

constexpr uint32_t kK = 10;
constexpr bool kSlow = testing::kThreadSanitizer || testing::kAddressSanitizer;

// The model: each id's current vector and label.
struct Row {
  const float* v;
  std::optional<uint32_t> label;
};
struct Model {
  std::map<uint64_t, Row> rows;
  vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);

  // Whether id passes the filter: its label in `labels`, and id in `ids` when given.
  bool passes(uint64_t id, const Row& r, const std::vector<uint32_t>& labels, const std::vector<uint64_t>* ids) const {
    if (!r.label || std::find(labels.begin(), labels.end(), *r.label) == labels.end()) return false;
    return !ids || std::find(ids->begin(), ids->end(), id) != ids->end();
  }
  std::vector<MappedNeighbor> exact(const float* q, const std::vector<uint32_t>& labels,
                                    const std::vector<uint64_t>* ids, uint32_t k) const {
    std::vector<MappedNeighbor> all;
    for (const auto& [id, r] : rows) {
      if (passes(id, r, labels, ids)) all.push_back({dist(q, r.v, kDim), id});
    }
    std::sort(all.begin(), all.end());
    if (all.size() > k) all.resize(k);
    return all;
  }
};

// A label for a new row: ~10% none; else 0 (~45%), 1 (~22%), 2 (~11%), 3 .. 9 (~1.6% each).
std::optional<uint32_t> random_label(std::mt19937_64& rng) {
  const uint32_t r = rng() % 1000;
  if (r < 100) return std::nullopt;
  if (r < 550) return 0u;
  if (r < 775) return 1u;
  if (r < 885) return 2u;
  return 3 + (r - 885) % 7;
}

// Every result passes the filter at the distance of its current vector, each id once,
// sorted; and there are min(k, passing rows) of them.
void expect_admissible(const Model& m, const float* q, const std::vector<uint32_t>& labels,
                       const std::vector<uint64_t>* ids, const std::vector<MappedNeighbor>& got, const std::string& at) {
  const size_t want = m.exact(q, labels, ids, UINT32_MAX).size();
  ASSERT_EQ(got.size(), std::min<size_t>(kK, want)) << at << ": k results whenever k rows match";
  for (size_t i = 0; i < got.size(); ++i) {
    const auto it = m.rows.find(got[i].id);
    ASSERT_NE(it, m.rows.end()) << at << ": id " << got[i].id << " is not in the index";
    ASSERT_TRUE(m.passes(it->first, it->second, labels, ids)) << at << ": id " << got[i].id << " does not match";
    ASSERT_EQ(got[i].distance, m.dist(q, it->second.v, kDim)) << at << ": id " << got[i].id << " with a stale vector";
  }
  expect_distinct_sorted(got, at);
}

template <class Mapped>
void expect_labels(const Mapped& x, const Model& m, const std::string& at) {
  for (const auto& [id, r] : m.rows) ASSERT_EQ(x.label(id), r.label) << at << ": the label of id " << id;
}

bool has_space(const BufferPool& pool, const std::string& name) {
  for (const SpaceInfo& s : pool.spaces()) {
    if (s.name == name) return true;
  }
  return false;
}

// Phases of random steps on a tiny pool: add a new id with a random label (28%), upsert a
// present id with a new vector and a new label or none (20%), an upsert batch of 2-4 ids
// (6%), delete 1-3 present ids (12%), a rejected add (labels of the wrong length: 4%),
// search (30%: labels {0} ~45%, {1, 2}, {rare}, {absent}, or labels and an allow-list).
// After each phase: check_structure, size and every id's label; after phase 1 a reopen.
template <class Kind>
void model_test(uint32_t frames) {
  using Mapped = typename Kind::Mapped;
  const uint64_t n = kSlow ? 600 : 1800;
  const Data d = testing::clustered(n, kDim, 8, 40, 37);
  TempDir dir;
  auto opts = testing::small_options(dir.path(), frames);
  auto pool = BufferPool::open(opts);
  auto x = std::make_unique<Mapped>(Mapped::attach(*pool, "v", Kind::create(*pool, "v", d)));
  auto st = std::make_unique<typename Mapped::State>(*x);
  Model m;
  std::mt19937_64 rng(4321);
  uint64_t next_row = 0, relabels = 0, unlabels = 0, rejected = 0, searches = 0, hits = 0, wanted = 0;
  std::map<std::string, uint64_t> by_selectivity;  // searches per kind of filter
  std::vector<MappedNeighbor> got;
  auto some_id = [&] {
    auto it = m.rows.begin();
    std::advance(it, rng() % m.rows.size());
    return it->first;
  };
  auto new_id = [&] {
    uint64_t id = rng() % 2 ? rng() % 10000 : rng() % (UINT64_MAX - 1);
    while (m.rows.count(id)) id = rng() % 10000;
    return id;
  };
  auto add_one = [&](uint64_t id, std::optional<uint32_t> label) {
    if (label) {
      x->add(std::span<const uint64_t>(&id, 1), d.row(next_row), 1, AddMode::kUpsert, std::span<const uint32_t>(&*label, 1));
    } else {
      x->add(id, d.row(next_row));
    }
    m.rows[id] = Row{d.row(next_row++), label};
  };
  const int steps = kSlow ? 140 : 380;
  for (int phase = 0; phase < 4; ++phase) {
    for (int step = 0; step < steps && next_row + 8 < n; ++step) {
      const std::string at = "phase " + std::to_string(phase) + " step " + std::to_string(step);
      const uint32_t dice = rng() % 100;
      if (dice < 28 || m.rows.size() < 4 * kK) {
        add_one(new_id(), random_label(rng));
      } else if (dice < 48) {
        const uint64_t id = some_id();
        const std::optional<uint32_t> was = m.rows[id].label;
        const std::optional<uint32_t> label = random_label(rng);
        add_one(id, label);
        relabels += label != was;
        unlabels += was && !label;
      } else if (dice < 54) {
        std::vector<uint64_t> batch{some_id(), new_id()};
        while (batch.size() < 2 + rng() % 3) {
          const uint64_t id = some_id();
          if (std::find(batch.begin(), batch.end(), id) == batch.end()) batch.push_back(id);
        }
        std::vector<uint32_t> labels;
        for (size_t i = 0; i < batch.size(); ++i) labels.push_back(random_label(rng).value_or(0));
        x->add(batch, d.row(next_row), 2, AddMode::kUpsert, labels);
        for (size_t i = 0; i < batch.size(); ++i) m.rows[batch[i]] = Row{d.row(next_row++), labels[i]};
      } else if (dice < 66) {  // 1-3 distinct present ids
        std::vector<uint64_t> present, batch;
        for (const auto& [id, r] : m.rows) present.push_back(id);
        std::sample(present.begin(), present.end(), std::back_inserter(batch), 1 + rng() % 3, rng);
        x->remove(batch);
        for (uint64_t id : batch) m.rows.erase(id);
      } else if (dice < 70) {
        const std::vector<uint64_t> batch{some_id(), new_id(), new_id() + 1};
        const std::vector<uint32_t> labels{7, 8};  // one short
        const uint32_t end = x->map().slot_end();
        const Error e = testing::expect_error(ErrorCode::kInvalidArgument,
                                              [&] { x->add(batch, d.row(next_row), 1, AddMode::kUpsert, labels); });
        EXPECT_NE(std::string(e.what()).find("labels holds 2 labels for 3 rows"), std::string::npos) << e.what();
        ASSERT_EQ(x->map().slot_end(), end) << at << ": a rejected batch took a slot";
        ASSERT_EQ(x->size(), m.rows.size()) << at;
        ASSERT_EQ(x->label(batch[0]), m.rows[batch[0]].label) << at << ": a rejected batch relabeled";
        ASSERT_FALSE(x->contains(batch[1])) << at;
        ++rejected;
      } else {
        const float* q = d.query(rng() % d.num_queries());
        const uint32_t f = rng() % 5;
        std::vector<uint32_t> labels;
        std::vector<uint64_t> ids;
        const char* kind = "";
        if (f == 0) labels = {0}, kind = "{0}";
        if (f == 1) labels = {2, 1, 2}, kind = "{1, 2}";
        if (f == 2) labels = {static_cast<uint32_t>(3 + rng() % 7)}, kind = "rare";
        if (f == 3) labels = {1000, UINT32_MAX}, kind = "absent";
        if (f == 4) {
          labels = {0, 1};
          for (const auto& [id, r] : m.rows) {
            if (rng() % 3 == 0) ids.push_back(id);
          }
          ids.push_back(UINT64_MAX - 7);
          kind = "ids and {0, 1}";
        }
        const std::vector<uint64_t>* a = f == 4 ? &ids : nullptr;
        {
          const index::SlotFilter filter = a ? x->filter(ids, labels) : x->filter_labels(labels);
          x->search(q, Kind::options(kK), *st, &got, filter);
        }
        expect_admissible(m, q, labels, a, got, at + " labels " + kind);
        if (::testing::Test::HasFatalFailure()) return;
        const std::vector<MappedNeighbor> exact = m.exact(q, labels, a, kK);
        if (Kind::kExact) {
          ASSERT_EQ(got, exact) << at;
        }
        for (const MappedNeighbor& e : exact) hits += std::count(got.begin(), got.end(), e);
        wanted += exact.size();
        ++searches;
        ++by_selectivity[kind];
      }
    }
    const std::string at = "phase " + std::to_string(phase);
    ASSERT_EQ(x->size(), m.rows.size()) << at;
    ASSERT_EQ(x->check_structure(), m.rows.size()) << at;
    expect_labels(*x, m, at);
    if (::testing::Test::HasFatalFailure()) return;
    if (phase == 1) {  // labels survive a flush and a reopen
      reopen<Kind>(opts, pool, x, st);
      ASSERT_TRUE(x->map().has_labels()) << "the label tree is opened with the map";
      ASSERT_EQ(x->check_structure(), m.rows.size()) << "after the reopen";
      expect_labels(*x, m, "after the reopen");
    }
  }
  EXPECT_GT(relabels, 20u);
  EXPECT_GT(unlabels, 2u);
  EXPECT_GT(rejected, 3u);
  EXPECT_GT(searches, 60u);
  for (const char* kind : {"{0}", "{1, 2}", "rare", "absent", "ids and {0, 1}"}) {
    EXPECT_GT(by_selectivity[kind], 5u) << kind;
  }
  EXPECT_GE(static_cast<double>(hits) / static_cast<double>(wanted), 0.9) << "recall";
  EXPECT_GT(testing::pages_pushed_out(pool->stats()), 0u) << "the pool is smaller than the index";
}

TEST(LabelsModel, HnswLabeledUpsertDeleteAndLabelFilteredSearch) { model_test<HnswKind<BufferPool>>(24); }
TEST(LabelsModel, IvfLabeledUpsertDeleteAndLabelFilteredSearch) { model_test<IvfKind<BufferPool>>(16); }

// The label space is created by the first labeled add, not before; labels of the wrong
// length change nothing (no slot taken, no label space); an upsert without labels drops
// the label; a label filter of an index without labels allows nothing.
template <class Kind>
void bad_labels_test() {
  using Mapped = typename Kind::Mapped;
  std::vector<uint64_t> ids(40);  // 40 unlabeled ids
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i * 7919 + (uint64_t{1} << 40);
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 32));
  const Data d = testing::clustered(600, kDim, 4, 10, 53);
  Mapped x = Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  x.add(ids, d.row(0));
  typename Mapped::State st(x);
  std::vector<MappedNeighbor> got;
  const uint32_t everything[] = {0, 1, UINT32_MAX};
  {
    const index::SlotFilter f = x.filter_labels(everything);
    EXPECT_EQ(f.allowed(), 0u);
    x.search(d.query(0), Kind::options(kK), st, &got, f);
    EXPECT_TRUE(got.empty()) << "no row has a label";
  }
  const std::string label_space = index::BasicIdMap<BufferPool>::labels_space("v");
  EXPECT_FALSE(has_space(*pool, label_space));
  const uint32_t end = x.map().slot_end();
  const std::vector<uint32_t> short_labels{1, 2};
  const std::vector<uint64_t> three{ids[0], 5, 6};
  const Error e = testing::expect_error(ErrorCode::kInvalidArgument,
                                        [&] { x.add(three, d.row(100), 1, AddMode::kUpsert, short_labels); });
  EXPECT_NE(std::string(e.what()).find("labels"), std::string::npos) << e.what();
  EXPECT_EQ(x.map().slot_end(), end);
  EXPECT_EQ(x.size(), 40u);
  EXPECT_FALSE(x.contains(5));
  EXPECT_FALSE(has_space(*pool, label_space)) << "a rejected batch created the label space";
  EXPECT_EQ(x.check_structure(), 40u);
  // Label half the ids (0: even ids, UINT32_MAX: the largest label is a label like any).
  std::vector<uint64_t> half;
  std::vector<uint32_t> labels;
  for (uint64_t i = 0; i < 40; i += 2) {
    half.push_back(ids[i]);
    labels.push_back(i % 4 == 0 ? 0u : UINT32_MAX);
  }
  x.add(half, d.row(200), 1, AddMode::kUpsert, labels);
  EXPECT_TRUE(has_space(*pool, label_space));
  EXPECT_EQ(x.label(ids[0]), 0u);
  EXPECT_EQ(x.label(ids[2]), UINT32_MAX);
  EXPECT_EQ(x.label(ids[1]), std::nullopt);
  EXPECT_EQ(x.label(12345), std::nullopt) << "not present";
  EXPECT_EQ(x.check_structure(), 40u);
  {
    const uint32_t top = UINT32_MAX;
    const index::SlotFilter f = x.filter_labels(std::span<const uint32_t>(&top, 1));
    EXPECT_EQ(f.allowed(), 10u);
    x.search(d.query(0), Kind::options(40), st, &got, f);
    ASSERT_EQ(got.size(), 10u);
    for (const MappedNeighbor& g : got) EXPECT_EQ(x.label(g.id), UINT32_MAX) << g.id;
  }
  // An upsert without labels writes the row whole: the id is unlabeled afterwards.
  x.add(ids[0], d.row(300));
  EXPECT_EQ(x.label(ids[0]), std::nullopt);
  EXPECT_EQ(x.check_structure(), 40u);
  const uint32_t zero = 0;
  EXPECT_EQ(x.filter_labels(std::span<const uint32_t>(&zero, 1)).allowed(), 9u);
  // Removing labeled ids removes their label entries ((L2) would fail otherwise).
  const std::vector<uint64_t> gone{ids[2], ids[4], ids[5]};
  x.remove(gone);
  EXPECT_EQ(x.check_structure(), 37u);
  EXPECT_EQ(x.filter_labels(everything).allowed(), 17u);
}

TEST(LabelsBadInput, HnswWrongLengthChangesNothing) { bad_labels_test<HnswKind<BufferPool>>(); }
TEST(LabelsBadInput, IvfWrongLengthChangesNothing) { bad_labels_test<IvfKind<BufferPool>>(); }

// Writers upsert their ids over and over; the first kStable ids always with label kStable
// (a new vector each time), the others with a label that changes every round (among 0..3),
// and now and then remove and re-add one of those; on HNSW a writer also consolidates
// (freed slots are reused while label filters live). Readers meanwhile search:
//   (a) labels {kStable}, k = kStable ids: exactly the stable ids, each once (an id whose
//       label stays in the set is never missed, an upsert never hides it);
//   (b) a random set of moving labels, random k: each result is a moving id, once, at the
//       distance of one of the vectors that id was given with a label in the set (what
//       "Labels" promises: the measured vector is one the id had with such a label);
//   (c) the allow-list of every id combined with {kStable}: the stable ids again.
// Then the structure ((L1), (L2)) and each id's last label. Runs for half of
// CALICO_STRESS_SECONDS per index (at least kMinRounds rounds, at most kMaxRounds).
template <class Kind>
void stress_test() {
  using Mapped = typename Kind::Mapped;
  constexpr uint64_t kIds = 32, kStable = 8;
  constexpr uint32_t kStableLabel = 1000, kMovingLabels = 4;
  constexpr unsigned kWriters = 2, kReaders = 2;
  constexpr uint64_t kMaxRounds = 150;
  // Rounds a writer runs even past the deadline (a slow build, e.g. ThreadSanitizer's,
  // still consolidates a few times), and writer 0 consolidates every kConsolidateEvery.
  constexpr uint64_t kMinRounds = 3, kConsolidateEvery = 3;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(CALICO_STRESS_SECONDS * 500);
  // Row of id i at round r (round 0: the first add), and its label: pure functions, so
  // readers check results without shared state.
  auto row_of = [](uint64_t i, uint64_t r) { return 400 + r * kIds + i; };
  auto label_of = [](uint64_t i, uint64_t r) {
    return i < kStable ? kStableLabel : static_cast<uint32_t>((i + r) % kMovingLabels);
  };
  auto id_of = [](uint64_t i) { return (i << 36) + 11; };
  const Data d = testing::clustered(row_of(0, kMaxRounds + 1), kDim, 6, 20, 43);
  TempDir dir;
  auto pool = BufferPool::open(testing::stress_options(testing::small_options(dir.path(), 64)));
  Mapped x = Mapped::attach(*pool, "v", Kind::create(*pool, "v", d));
  std::vector<uint64_t> ids(kIds);
  std::vector<uint32_t> labels(kIds);
  for (uint64_t i = 0; i < kIds; ++i) {
    ids[i] = id_of(i);
    labels[i] = label_of(i, 0);
  }
  x.add(ids, d.row(row_of(0, 0)), 1, AddMode::kUpsert, labels);
  const std::vector<uint64_t> stable(ids.begin(), ids.begin() + kStable);
  std::vector<uint64_t> last_round(kIds, 0);  // written by id i's writer, read after join
  std::atomic<unsigned> writers_done{0};
  std::atomic<uint64_t> searches{0}, consolidations{0};
  std::atomic<int> failures{0};
  std::vector<std::string> failure_notes(kReaders);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(100 + w);
      // Under load the writers could finish every round before a reader runs once: they
      // start after the first search (readers search until the writers are done).
      while (searches.load() == 0) std::this_thread::yield();
      for (uint64_t r = 1; r <= kMaxRounds && (r <= kMinRounds || std::chrono::steady_clock::now() < deadline ||
                                                searches.load() < 10);
           ++r) {
        for (uint64_t i = w; i < kIds; i += kWriters) {
          const uint32_t label = label_of(i, r);
          if (i >= kStable && rng() % 8 == 0) {
            x.remove(std::span<const uint64_t>(&ids[i], 1));
          }
          x.add(std::span<const uint64_t>(&ids[i], 1), d.row(row_of(i, r)), 1, AddMode::kUpsert,
                std::span<const uint32_t>(&label, 1));
          last_round[i] = r;
        }
        if constexpr (Kind::kConsolidates) {
          if (w == 0 && r % kConsolidateEvery == 0) {
            x.consolidate();
            consolidations.fetch_add(1);
          }
        }
      }
      writers_done.fetch_add(1);
    });
  }
  for (unsigned t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      typename Mapped::State st(x);
      std::vector<MappedNeighbor> got;
      std::mt19937_64 rng(t);
      const vector::DistanceFn dist = vector::distance_kernel(Metric::kL2);
      auto fail = [&](const std::string& what) {
        if (failures.fetch_add(1) == 0 || failure_notes[t].empty()) failure_notes[t] = what;
      };
      auto expect_stable = [&](const char* how) {
        std::vector<uint64_t> seen;
        for (const MappedNeighbor& g : got) seen.push_back(g.id);
        std::sort(seen.begin(), seen.end());
        if (seen != stable) fail(std::string(how) + ": " + std::to_string(seen.size()) + " ids, not the stable ones");
      };
      while (writers_done.load() < kWriters && failures.load() == 0) {
        const float* q = d.query(rng() % d.num_queries());
        {  // (a)
          const index::SlotFilter f = x.filter_labels(std::span<const uint32_t>(&kStableLabel, 1));
          x.search(q, Kind::options(kStable), st, &got, f);
          expect_stable("(a)");
        }
        {  // (b)
          std::vector<uint32_t> set;
          for (uint32_t l = 0; l < kMovingLabels; ++l) {
            if (rng() % 2) set.push_back(l);
          }
          const uint32_t k = 1 + rng() % kIds;
          const index::SlotFilter f = x.filter_labels(set);
          x.search(q, Kind::options(k), st, &got, f);
          for (size_t a = 0; a < got.size(); ++a) {
            const uint64_t i = got[a].id >> 36;
            if (i < kStable || i >= kIds || id_of(i) != got[a].id) {
              fail("(b): id " + std::to_string(got[a].id) + " is not a moving id");
              continue;
            }
            bool had = false;
            for (uint64_t r = 0; r <= kMaxRounds && !had; ++r) {
              had = std::find(set.begin(), set.end(), label_of(i, r)) != set.end() &&
                    dist(q, d.row(row_of(i, r)), kDim) == got[a].distance;
            }
            if (!had) fail("(b): id " + std::to_string(got[a].id) + " never had a vector at that distance with such a label");
            for (size_t b = 0; b < a; ++b) {
              if (got[b].id == got[a].id) fail("(b): an id twice");
            }
          }
        }
        {  // (c)
          const index::SlotFilter f = x.filter(ids, std::span<const uint32_t>(&kStableLabel, 1));
          x.search(q, Kind::options(kStable), st, &got, f);
          expect_stable("(c)");
        }
        searches.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& note : failure_notes) EXPECT_EQ(note, "");
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(searches.load(), 0u);
  if constexpr (Kind::kConsolidates) {
    EXPECT_GT(consolidations.load(), 0u);
  }
  EXPECT_EQ(x.size(), kIds);
  EXPECT_EQ(x.check_structure(), kIds);
  for (uint64_t i = 0; i < kIds; ++i) EXPECT_EQ(x.label(ids[i]), label_of(i, last_round[i])) << "id " << ids[i];
}

TEST(LabelsConcurrent, HnswRelabelingWhileFilteringByLabel) { stress_test<HnswKind<BufferPool>>(); }
TEST(LabelsConcurrent, IvfRelabelingWhileFilteringByLabel) { stress_test<IvfKind<BufferPool>>(); }

}  // namespace
}  // namespace calico
