// The brute-force model of the removal and filter tests of the graph indexes
// (tests/index/hnsw_remove_filter_test.cc, coded_hnsw_delete_test.cc): which ids are live,
// the exact answer among the live ids an allow-list admits, the checks every search result
// must pass, and random allow-lists.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "calico/error.h"
#include "support/test_util.h"
#include "support/vector_data.h"
#include "vector/distance.h"
#include "vector/id_filter.h"

namespace calico::testing {

// Ids 0 .. capacity - 1 are rows of data; live[id] says which are in the index.
struct FilterModel {
  const Data& data;
  uint32_t capacity;
  uint32_t k;
  std::vector<uint8_t> live = std::vector<uint8_t>(capacity, 0);
  vector::DistanceFn dist = vector::distance_kernel(vector::Metric::kL2);

  uint32_t live_count() const { return static_cast<uint32_t>(std::count(live.begin(), live.end(), 1)); }
  static bool allowed_by(const std::vector<uint64_t>* allow, uint32_t id) {
    return allow == nullptr || vector::IdFilter{*allow}.allows(id);
  }
  // The exact k nearest live ids allow admits (all when nullptr); *admissible: how many there are.
  std::vector<vector::Neighbor> exact(const float* q, const std::vector<uint64_t>* allow, size_t* admissible) const {
    std::vector<vector::Neighbor> all;
    for (uint32_t id = 0; id < capacity; ++id) {
      if (live[id] && allowed_by(allow, id)) all.push_back({dist(q, data.row(id), data.dim), id});
    }
    *admissible = all.size();
    std::sort(all.begin(), all.end());
    all.resize(std::min<size_t>(k, all.size()));
    return all;
  }
};

// The checks every search result must pass, whatever the path: min(k, admissible) results,
// sorted, distinct, each live and allowed, with its exact distance.
inline void expect_admissible(const FilterModel& m, const float* q, const std::vector<uint64_t>* allow,
                              const std::vector<vector::Neighbor>& got, const std::string& what) {
  size_t admissible = 0;
  m.exact(q, allow, &admissible);
  ASSERT_EQ(got.size(), std::min<size_t>(m.k, admissible)) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const uint32_t id = got[i].id;
    ASSERT_LT(id, m.capacity) << what;
    ASSERT_TRUE(m.live[id]) << what << ": returned id " << id << ", which is not live";
    ASSERT_TRUE(FilterModel::allowed_by(allow, id)) << what << ": returned id " << id << ", which the filter excludes";
    ASSERT_EQ(got[i].distance, m.dist(q, m.data.row(id), m.data.dim)) << what << ": id " << id;
    if (i > 0) {
      ASSERT_TRUE(got[i - 1] < got[i]) << what << ": results must be sorted and distinct";
    }
  }
}

// Expects `fn` to throw kInvalidArgument whose message contains `part`.
template <class Fn>
void expect_invalid(const std::string& part, Fn&& fn) {
  const Error e = expect_error(ErrorCode::kInvalidArgument, fn);
  EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
}

// An allow-list over ids < capacity admitting each with probability `fraction`.
inline std::vector<uint64_t> random_allow_list(std::mt19937_64& rng, double fraction, uint32_t capacity) {
  std::vector<uint64_t> words((capacity + 63) / 64, 0);
  std::bernoulli_distribution pick(fraction);
  for (uint32_t id = 0; id < capacity; ++id) {
    if (pick(rng)) words[id / 64] |= uint64_t{1} << (id % 64);
  }
  return words;
}

}  // namespace calico::testing
