// Test support for the mapped indexes (include/calico/index/mapped_index.h): how each index
// under an id map is made, opened and searched, so that a test body is written once for
// HNSW and IVF (tests/index/id_map_test.cc, tests/index/labels_test.cc). Small parameters:
// dim 8; HNSW M 8, ef 96 (approximate unless a filter makes it scan); IVF 8 lists, all
// probed (exact).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "calico/index/mapped_index.h"
#include "support/vector_data.h"

namespace calico::testing::mapped {

inline constexpr uint32_t kDim = 8;
inline constexpr uint32_t kNlist = 8;

template <class Pool>
struct HnswKind {
  using Index = index::BasicHnsw<Pool>;
  using Mapped = index::BasicMapped<Index>;
  static constexpr bool kExact = false;
  static constexpr bool kConsolidates = true;
  static Index create(Pool& pool, const std::string& name, const Data&) {
    index::HnswParams p;
    p.dim = kDim;
    p.M = 8;
    p.ef_construction = 64;
    return Index::create(pool, name, p, 64);
  }
  static Index open(Pool& pool, const std::string& name) { return Index::open(pool, name); }
  static index::HnswSearchOptions options(uint32_t k) {
    index::HnswSearchOptions o;
    o.k = k;
    o.ef = 96;
    return o;
  }
  // The bare index's add and remove (an index written before the map existed).
  static void add_legacy(Index& x, uint32_t id, const float* v) { x.add(id, v); }
  static void remove_legacy(Index& x, uint32_t id) { x.remove(id); }
};

template <class Pool>
struct IvfKind {
  using Index = index::BasicIvf<Pool>;
  using Mapped = index::BasicMapped<Index>;
  static constexpr bool kExact = true;  // nprobe = nlist
  static constexpr bool kConsolidates = false;
  // Trained on the first 400 rows of d (train_only: none of them is stored).
  static Index create(Pool& pool, const std::string& name, const Data& d) {
    index::IvfParams p;
    p.dim = kDim;
    p.nlist = kNlist;
    p.train_iters = 4;
    p.threads = 1;
    p.train_only = true;
    return Index::build(pool, name, p, d.rows.data(), 400);
  }
  static Index open(Pool& pool, const std::string& name) { return Index::open(pool, name); }
  static index::IvfSearchOptions options(uint32_t k) { return index::IvfSearchOptions{k, kNlist, true, true}; }
  static void add_legacy(Index& x, uint32_t id, const float* v) { x.add(id, v); }
  static void remove_legacy(Index& x, uint32_t id) { x.remove(&id, 1); }
};

// Writes the map's counts, flushes and closes the search state, the index "v" and the pool,
// then opens all three again (what a later process sees).
template <class Kind, class PoolPtr, class Options>
void reopen(const Options& opts, PoolPtr& pool, std::unique_ptr<typename Kind::Mapped>& x,
            std::unique_ptr<typename Kind::Mapped::State>& st) {
  using Mapped = typename Kind::Mapped;
  x->sync();
  pool->flush();
  st.reset();
  x.reset();
  pool.reset();
  pool = std::remove_reference_t<decltype(*pool)>::open(opts);
  x = std::make_unique<Mapped>(Mapped::attach(*pool, "v", Kind::open(*pool, "v")));
  st = std::make_unique<typename Mapped::State>(*x);
}

// Results of a mapped search hold each id once, sorted by (distance, id).
inline void expect_distinct_sorted(const std::vector<index::MappedNeighbor>& got, const std::string& at) {
  for (size_t i = 1; i < got.size(); ++i) {
    ASSERT_FALSE(got[i] < got[i - 1]) << at << ": not sorted";
    for (size_t j = 0; j < i; ++j) ASSERT_NE(got[j].id, got[i].id) << at << ": an id twice";
  }
}

}  // namespace calico::testing::mapped
