// Test support: the churn workload of the vector crash test (tests/index/vector_crash_test.cc),
// shared by the test and its child process (vector_tool churn). Round r upserts a batch of
// ids (new ones and replacements, each with a label), deletes a batch of live ones, and every
// fourth round consolidates; the tool flushes after every round. Everything is a function of
// (seed, round), so the parent replays the model of any round without the child.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace calico::testing {

inline constexpr uint32_t kChurnDim = 8;

struct ChurnRow {
  uint64_t version;  // the round that last wrote it
  uint32_t label;
};
using ChurnModel = std::map<uint64_t, ChurnRow>;  // id -> its row

struct ChurnRound {
  std::vector<uint64_t> upserts;
  std::vector<uint32_t> labels;  // parallel to upserts
  std::vector<uint64_t> deletes;
  bool consolidate = false;
};

// The vector of (id, version): deterministic, distinct per pair.
inline std::vector<float> churn_vector(uint64_t id, uint64_t version) {
  std::mt19937_64 rng(id * 1000003u + version * 7919u + 17);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(kChurnDim);
  for (float& x : v) x = u(rng);
  return v;
}

// Round r's operations, given the model before it (the ids it may delete or replace).
inline ChurnRound churn_round(uint64_t seed, uint64_t r, const ChurnModel& before) {
  std::mt19937_64 rng(seed * 31 + r);
  ChurnRound out;
  std::vector<uint64_t> live;
  for (const auto& [id, row] : before) live.push_back(id);
  std::shuffle(live.begin(), live.end(), rng);
  const size_t replaced = std::min<size_t>(live.size(), 10);
  for (size_t i = 0; i < replaced; ++i) out.upserts.push_back(live[i]);
  for (int i = 0; i < 30; ++i) out.upserts.push_back(1'000'000'000'000ull + r * 100 + static_cast<uint64_t>(i));
  for (const uint64_t id : out.upserts) out.labels.push_back(static_cast<uint32_t>((id + r) % 5));
  for (size_t i = replaced; i < live.size() && out.deletes.size() < 15; ++i) out.deletes.push_back(live[i]);
  out.consolidate = r % 4 == 3;
  return out;
}

// The model after rounds [0, rounds).
inline ChurnModel churn_model(uint64_t seed, uint64_t rounds) {
  ChurnModel m;
  for (uint64_t r = 0; r < rounds; ++r) {
    const ChurnRound c = churn_round(seed, r, m);
    for (size_t i = 0; i < c.upserts.size(); ++i) m[c.upserts[i]] = {r, c.labels[i]};
    for (const uint64_t id : c.deletes) m.erase(id);
  }
  return m;
}

}  // namespace calico::testing
