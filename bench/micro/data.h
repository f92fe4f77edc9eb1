// The data of the microbenchmarks, generated identically for every translation variant:
//   load_ycsb_tree<Pool>(options, records, value_bytes)   a scratch pool holding a B+tree
//                                                of YCSB records 0..n-1 (bench/ycsb/kv_store.h
//                                                keys and self-checking values), bulk-loaded
//   random_neighbours(seed, nodes, degree)       the graph of [Calico] section 3.3: every
//                                                node has `degree` uniformly random
//                                                out-neighbours (never itself)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calico/index/btree.h"
#include "ycsb/generated_records.h"
#include "ycsb/kv_store.h"
#include "micro/harness.h"
#include "support/page_pattern.h"

namespace calico::bench {

template <class Pool>
struct YcsbTree {
  micro::ScratchPool<Pool> pool;
  std::optional<index::BasicBTree<Pool>> tree;  // destroyed before the pool
  size_t value_bytes = 0;

  // Looks key k up into *value; true when found with the value that encodes k.
  bool read(uint64_t k, std::string* value) {
    char key[kv::kKeyBytes];
    kv::encode_key(k, key);
    return tree->lookup(std::string_view(key, kv::kKeyBytes), value) && kv::check_value(*value, k, value_bytes);
  }
};

template <class Pool>
std::shared_ptr<YcsbTree<Pool>> load_ycsb_tree(const PoolOptions& opt, uint64_t records, size_t value_bytes) {
  auto t = std::make_shared<YcsbTree<Pool>>();
  t->pool = micro::open_scratch_pool<Pool>(opt);
  t->tree.emplace(index::BasicBTree<Pool>::create(*t->pool, "btree"));
  t->value_bytes = value_bytes;
  auto make_record = [&](uint64_t i, std::string* k, std::string* v) {
    char key[kv::kKeyBytes];
    kv::encode_key(i, key);
    k->assign(key, kv::kKeyBytes);
    kv::make_value(i, 0, value_bytes, v);
  };
  auto no_progress = [](uint64_t) {};
  // FunctionRefs point at the named lambdas above, which outlive the load.
  FunctionRef<void(uint64_t, std::string*, std::string*)> make = make_record;
  FunctionRef<void(uint64_t)> progress = no_progress;
  uint64_t steps = 0;
  t->tree->bulk_load(kv::GeneratedRecords(0, &make, &progress, &steps),
                     kv::GeneratedRecords(records, &make, &progress, &steps));
  return t;
}

// The `degree` out-neighbours of `node` (a function of seed and node only).
inline void random_neighbours(uint64_t seed, uint32_t nodes, uint32_t degree, uint32_t node,
                              std::vector<uint32_t>* out) {
  uint64_t state = seed * 0x2545F4914F6CDD1Dull ^ node;
  for (uint32_t j = 0; j < degree; ++j) {
    auto v = static_cast<uint32_t>(test::splitmix64(state) % nodes);
    out->push_back(v == node && nodes > 1 ? (v + 1) % nodes : v);
  }
}

}  // namespace calico::bench
