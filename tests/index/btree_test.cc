// B+tree: model tests against std::map (normal, tiny pools, 8 KB pages), concurrency,
// persistence (same process and a forked one), bulk load, bad input.
#include "calico/index/btree.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using index::BTree;
using testing::expect_error;
using testing::small_options;
using testing::TempDir;

// Sanitizer builds run ~10x slower: scale the sizes down there.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 2;
#else
constexpr int kScale = 1;
#endif

// A vocabulary of keys of 1..64 bytes, a third sharing long prefixes, so that operations
// hit existing keys often.
std::vector<std::string> make_keys(std::mt19937_64& rng, size_t n) {
  static const std::string prefixes[] = {
      "", "user/", "order/2024/customer/0000000000/line/", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz/"};
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = prefixes[rng() % 4];
    size_t len = 1 + rng() % 64;
    std::string k = p.substr(0, std::min(p.size(), len - 1));
    while (k.size() < len) k.push_back(static_cast<char>('a' + rng() % 26));
    keys.push_back(k);
  }
  return keys;
}

std::string random_value(std::mt19937_64& rng, size_t max_len = 200) {
  std::string v(rng() % (max_len + 1), '\0');
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

template <class Tree>
void expect_same(Tree& tree, const std::map<std::string, std::string>& model) {
  auto it = model.begin();
  size_t n = 0;
  tree.scan("", [&](std::string_view k, std::string_view v) {
    EXPECT_NE(it, model.end()) << "extra key in tree: " << k;
    if (it == model.end()) return false;
    EXPECT_EQ(k, it->first);
    EXPECT_EQ(v, it->second) << "key " << k;
    ++it;
    ++n;
    return true;
  });
  EXPECT_EQ(n, model.size());
  EXPECT_EQ(tree.size(), model.size());
}

template <class Pool>
void run_model(Pool& pool, uint64_t seed, int ops) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto tree = index::BasicBTree<Pool>::create(pool, "tree");
  std::map<std::string, std::string> model;
  std::vector<std::string> keys = make_keys(rng, 3000);
  for (int op = 0; op < ops; ++op) {
    const std::string& k = keys[rng() % keys.size()];
    int kind = static_cast<int>(rng() % 100);
    if (kind < 35) {
      std::string v = random_value(rng);
      bool added = model.emplace(k, v).second;
      ASSERT_EQ(tree.insert(k, v), added) << "op " << op;
    } else if (kind < 47) {
      std::string v = random_value(rng);
      model[k] = v;
      tree.upsert(k, v);
    } else if (kind < 55) {  // in place: every byte + 1
      auto it = model.find(k);
      ASSERT_EQ(tree.update(k,
                            [](std::span<std::byte> v) {
                              for (std::byte& b : v) b = std::byte(static_cast<uint8_t>(b) + 1);
                            }),
                it != model.end())
          << "op " << op;
      if (it != model.end()) {
        for (char& c : it->second) c = static_cast<char>(static_cast<uint8_t>(c) + 1);
      }
    } else if (kind < 75) {
      ASSERT_EQ(tree.remove(k), model.erase(k) == 1) << "op " << op;
    } else if (kind < 95) {
      std::string got;
      auto it = model.find(k);
      ASSERT_EQ(tree.lookup(k, &got), it != model.end()) << "op " << op;
      if (it != model.end()) {
        ASSERT_EQ(got, it->second);
      }
    } else {
      size_t len = rng() % 50;
      auto it = model.lower_bound(k);
      size_t n = 0;
      bool ok = true;
      tree.scan(k, [&](std::string_view tk, std::string_view tv) {
        if (n == len) return false;
        if (it == model.end() || tk != it->first || tv != it->second) {
          ok = false;
          return false;
        }
        ++it;
        ++n;
        return true;
      });
      ASSERT_TRUE(ok) << "scan from " << k << " differs at position " << n << " (op " << op << ")";
      ASSERT_TRUE(n == len || it == model.end()) << "scan stopped early (op " << op << ")";
    }
    if ((op + 1) % 2000 == 0) {
      ASSERT_NO_THROW(tree.check()) << "op " << op;
    }
  }
  ASSERT_NO_THROW(tree.check());
  expect_same(tree, model);
}

struct ModelParams {
  uint32_t frames;
  size_t page_size;
};

class BTreeModel : public ::testing::TestWithParam<ModelParams> {};

TEST_P(BTreeModel, RandomOperationsMatchStdMap) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), GetParam().frames, GetParam().page_size));
  run_model(*pool, 0xB7EE5EED, 20000 / kScale);
  pool->check_invariants();
}

INSTANTIATE_TEST_SUITE_P(BTree, BTreeModel,
                         ::testing::Values(ModelParams{1024, 4096}, ModelParams{6, 4096},
                                           ModelParams{6, 8192}),
                         [](const auto& info) {
                           return std::to_string(info.param.frames) + "frames_" +
                                  std::to_string(info.param.page_size);
                         });

// The model test, concurrency and tiny-pool tests on every translation that evicts.
template <class Pool>
class BTreeOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(BTreeOnEveryTranslation, testing::IndexPools, testing::PoolName);

TYPED_TEST(BTreeOnEveryTranslation, RandomOperationsMatchStdMapOnTinyAndLargePools) {
  for (uint32_t frames : {6u, 1024u}) {
    TempDir dir;
    auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), frames));
    run_model(*pool, 0xB7EE5EED + frames, 8000 / kScale);
    pool->check_invariants();
  }
}

// direct: the model test on a pool that holds everything; a pool smaller than the tree is
// refused with kPoolFull, and the stored pages stay intact.
TEST(BTreeOnDirect, ModelTestWhenResidentAndClearErrorWhenNot) {
  using Pool = BasicBufferPool<translation::DirectTranslation>;
  {
    TempDir dir;
    auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 4096));
    run_model(*pool, 0xD1EC7, 8000 / kScale);
    pool->check_invariants();
  }
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 8));
  auto tree = index::BasicBTree<Pool>::create(*pool, "tree");
  std::map<std::string, std::string> model;
  Error e = expect_error(ErrorCode::kPoolFull, [&] {
    for (int i = 0;; ++i) {
      std::string k = "key" + std::to_string(i), v(100, static_cast<char>('a' + i % 26));
      tree.insert(k, v);
      model[k] = v;
    }
  });
  EXPECT_NE(std::string(e.what()).find("direct translation"), std::string::npos) << e.what();
  EXPECT_GT(model.size(), 10u);
  for (auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(tree.lookup(k, &got)) << k;
    EXPECT_EQ(got, v);
  }
}

TYPED_TEST(BTreeOnEveryTranslation, ConcurrentWritersAndReaders) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  auto tree = index::BasicBTree<Pool>::create(*pool, "tree");
  // Keys readers can rely on: inserted before the threads start, never touched.
  const int stable = 500;
  auto stable_key = [](int i) { return "m/stable/" + std::to_string(i * 7919 % 100000); };
  for (int i = 0; i < stable; ++i) ASSERT_TRUE(tree.insert(stable_key(i), "v" + std::to_string(i)));

  const int writers = 4, ops = 6000 / kScale;
  std::vector<std::map<std::string, std::string>> models(writers);
  std::atomic<int> writers_done{0};
  std::atomic<uint64_t> errors{0}, reader_rounds{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(1000 + w);
      auto& model = models[w];
      for (int op = 0; op < ops; ++op) {
        // Writers interleave in key order ("w<digit>" < "m..." < ...) to share leaves.
        std::string k = "k" + std::to_string(rng() % 2000) + "/w" + std::to_string(w);
        if (rng() % 3 != 0) {
          std::string v = random_value(rng, 100);
          tree.upsert(k, v);
          model[k] = v;
        } else {
          bool removed = tree.remove(k);
          if (removed != (model.erase(k) == 1)) errors.fetch_add(1);
        }
      }
      writers_done.fetch_add(1);
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(77 + r);
      while (writers_done.load() < writers) {
        int i = static_cast<int>(rng() % stable);
        std::string v;
        if (!tree.lookup(stable_key(i), &v) || v != "v" + std::to_string(i)) errors.fetch_add(1);
        std::string prev;
        int n = 0;
        tree.scan("k" + std::to_string(rng() % 2000), [&](std::string_view k, std::string_view) {
          if (!prev.empty() && !(prev < k)) errors.fetch_add(1);
          prev.assign(k);
          return ++n < 100;
        });
        reader_rounds.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(reader_rounds.load(), 0u);
  ASSERT_NO_THROW(tree.check());
  std::map<std::string, std::string> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  for (int i = 0; i < stable; ++i) all[stable_key(i)] = "v" + std::to_string(i);
  expect_same(tree, all);
  pool->check_invariants();
}

// update() is atomic per record: threads adding to shared 8-byte counters in place, while
// others insert around them (splits move the counters between leaves), lose no increment.
TYPED_TEST(BTreeOnEveryTranslation, ConcurrentInPlaceUpdatesLoseNoIncrement) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  auto tree = index::BasicBTree<Pool>::create(*pool, "tree");
  const int counters = 50, adders = 3, adds = 4000 / kScale;
  auto counter_key = [](int i) { return "c" + std::to_string(i * 37 % 1000); };
  for (int i = 0; i < counters; ++i) ASSERT_TRUE(tree.insert(counter_key(i), std::string(8, '\0')));
  std::atomic<uint64_t> missing{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < adders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(5 + t);
      for (int op = 0; op < adds; ++op) {
        bool found = tree.update(counter_key(static_cast<int>(rng() % counters)), [](std::span<std::byte> v) {
          uint64_t c;
          std::memcpy(&c, v.data(), 8);
          ++c;
          std::memcpy(v.data(), &c, 8);
        });
        if (!found) missing.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    std::mt19937_64 rng(99);
    for (int i = 0; i < 3000 / kScale; ++i) tree.upsert("c" + std::to_string(rng() % 1000) + "/x", random_value(rng, 120));
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(missing.load(), 0u);
  uint64_t total = 0;
  for (int i = 0; i < counters; ++i) {
    std::string v;
    ASSERT_TRUE(tree.lookup(counter_key(i), &v));
    ASSERT_EQ(v.size(), 8u);
    uint64_t c;
    std::memcpy(&c, v.data(), 8);
    total += c;
  }
  EXPECT_EQ(total, uint64_t{adders} * adds);
  EXPECT_FALSE(tree.update("absent", [](std::span<std::byte>) { ADD_FAILURE() << "called for an absent key"; }));
  ASSERT_NO_THROW(tree.check());
  pool->check_invariants();
}

// btree_racy_step on intact nodes agrees with NodeRef (covers, lower_bound, child_for,
// value; the frame hint in the hinted format); on corrupted ones (random header/slot
// fields, random pages) it never reads outside the page: the page and the value buffer are
// heap blocks of exactly their size, so ASan catches any stray read or write.
template <bool kHints>
void in_place_search_matches_node_ref() {
  using index::NodeEntry;
  using NodeRef = index::BasicNodeRef<kHints>;
  using index::NodeType;
  using index::RacyResult;
  using index::RacyStep;
  const size_t size = 4080;
  std::mt19937_64 rng(7);
  // Hints are any 32-bit value (the plain format draws none, keeping its random sequence).
  auto random_hint = [&] { return kHints ? static_cast<FrameId>(rng()) : kInvalidFrame; };
  std::unique_ptr<std::byte[]> page(new std::byte[size]);
  std::unique_ptr<std::byte[]> value(new std::byte[index::kMaxValueBytes]);
  std::vector<std::string> vocab = make_keys(rng, 400);
  std::sort(vocab.begin(), vocab.end());
  vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
  int checked = 0;
  for (int round = 0; round < 300 / kScale; ++round) {
    // A node over a random key range [lo, hi] of the vocabulary.
    size_t a = rng() % vocab.size(), b = rng() % vocab.size();
    if (a > b) std::swap(a, b);
    bool lower_inf = rng() % 4 == 0, upper_inf = rng() % 4 == 0;
    std::string lower = vocab[a], upper = vocab[b];
    if (!lower_inf && !upper_inf && !(lower < upper)) continue;
    bool inner = rng() % 2 == 0;
    std::vector<NodeEntry> es;
    size_t bytes = NodeRef::kHeader + lower.size() + upper.size();
    for (const std::string& k : vocab) {
      if ((!lower_inf && k <= lower) || (!upper_inf && k > upper)) continue;
      if (rng() % 2) continue;
      std::string v = inner ? index::encode_child_ref<kHints>(static_cast<BlockId>(1 + rng() % 1000), random_hint())
                            : random_value(rng, 60);
      if (bytes + index::kSlotBytes + k.size() + v.size() > size) break;
      bytes += index::kSlotBytes + k.size() + v.size();
      es.push_back({k, v});
    }
    if (inner && !upper_inf && !es.empty() && es.back().key == upper) es.pop_back();  // keys < upper child's range
    NodeRef::build(page.get(), size, inner ? NodeType::kInner : NodeType::kLeaf, inner ? 1 : 0,
                   lower_inf ? nullptr : &lower, upper_inf ? nullptr : &upper, es,
                   inner ? static_cast<BlockId>(5000 + round) : 0, random_hint());
    NodeRef n(page.get(), size);
    ASSERT_TRUE(n.well_formed());
    for (int q = 0; q < 50; ++q) {
      std::string key = rng() % 4 == 0 ? make_keys(rng, 1)[0] : vocab[rng() % vocab.size()];
      bool after = rng() % 4 == 0;
      RacyResult r;
      RacyStep st = index::btree_racy_step<kHints>(page.get(), size, key, after, 0, inner ? nullptr : value.get(), &r);
      if (!n.covers(key, after)) {
        EXPECT_EQ(st, RacyStep::kRestart) << key;
        continue;
      }
      ++checked;
      if (inner) {
        ASSERT_EQ(st, RacyStep::kDescend) << key;
        EXPECT_EQ(r.child, n.child_for(key, after)) << key;
        bool found;
        EXPECT_EQ(r.hint, n.hint_at(n.lower_bound(key, after, &found))) << key;
      } else {
        ASSERT_EQ(st, RacyStep::kTarget) << key;
        bool found;
        size_t i = n.lower_bound(key, after, &found);
        if (after) continue;
        ASSERT_EQ(r.found, found) << key;
        if (found) {
          EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(value.get()), r.value_len), n.value(i));
        }
      }
    }
    // Corruption of the intact node: 1..3 random 16-bit fields in the header and the slots,
    // or a random page.
    const std::vector<std::byte> good(page.get(), page.get() + size);
    const size_t limit = NodeRef::kHeader + size_t{n.count()} * index::kSlotBytes;
    for (int c = 0; c < 200; ++c) {
      std::memcpy(page.get(), good.data(), size);
      if (c % 50 == 49) {
        for (size_t i = 0; i < size; ++i) page[i] = static_cast<std::byte>(rng());
      } else {
        for (int f = 0, fields = 1 + static_cast<int>(rng() % 3); f < fields; ++f) {
          size_t at = (rng() % std::min(limit, size)) & ~size_t{1};
          uint64_t kind = rng() % 3;
          uint16_t x = static_cast<uint16_t>(kind == 0 ? rng() : kind == 1 ? rng() % (size + 64) : rng() % 600);
          std::memcpy(page.get() + at, &x, 2);
        }
      }
      // Mostly keys of the node, so that the search reaches (corrupted) slots and values.
      std::string key = !es.empty() && rng() % 4 != 0 ? es[rng() % es.size()].key : vocab[rng() % vocab.size()];
      RacyResult r;
      for (int stop = 0; stop <= 1; ++stop) {
        index::btree_racy_step<kHints>(page.get(), size, key, rng() % 2 == 0, stop, stop == 0 ? value.get() : nullptr, &r);
      }
    }
  }
  EXPECT_GT(checked, 1000);
}
TEST(BTree, InPlaceSearchMatchesNodeRefAndStaysInBoundsOnGarbage) { in_place_search_matches_node_ref<false>(); }
TEST(BTree, HintedInPlaceSearchMatchesNodeRefAndStaysInBoundsOnGarbage) { in_place_search_matches_node_ref<true>(); }

// Optimistic readers search nodes in place in their frames. On a tiny pool, with writers
// that constantly split and merge leaves (values of 0..400 bytes, a third of the operations
// removes) and eviction reusing frames for other pages, readers keep meeting pages that are
// being modified or that hold another page's bytes. Every value a writer stores encodes its
// key (key '#' generation '|' filler of one letter chosen by the generation), so every
// lookup result can be checked on its own; stable keys must always be found unchanged.
std::string derived_value(const std::string& key, uint64_t gen, size_t filler) {
  std::string v = key + "#" + std::to_string(gen) + "|";
  v.append(filler, static_cast<char>('a' + gen % 26));
  return v;
}
bool derived_value_ok(std::string_view key, std::string_view v) {
  if (v.size() < key.size() + 3 || v.substr(0, key.size()) != key || v[key.size()] != '#') return false;
  size_t i = key.size() + 1;
  uint64_t gen = 0;
  size_t digits = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') gen = gen * 10 + static_cast<uint64_t>(v[i++] - '0'), ++digits;
  if (digits == 0 || i >= v.size() || v[i] != '|') return false;
  for (++i; i < v.size(); ++i) {
    if (v[i] != static_cast<char>('a' + gen % 26)) return false;
  }
  return true;
}

TYPED_TEST(BTreeOnEveryTranslation, InPlaceReadersSeeOnlyWrittenValuesOnTinyPool) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 24));
  auto tree = index::BasicBTree<Pool>::create(*pool, "tree");
  // Long shared prefixes exercise the prefix stripping; short keys the key heads.
  auto key_of = [](uint64_t n, int w) {
    static const char* prefixes[] = {"", "p/", "order/2024/customer/0000000000/line/"};
    return std::string(prefixes[n % 3]) + std::to_string(n) + "/w" + std::to_string(w);
  };
  const int stable = 300;
  auto stable_key = [](int i) { return "order/2024/customer/0000000000/line/s" + std::to_string(i); };
  for (int i = 0; i < stable; ++i) ASSERT_TRUE(tree.insert(stable_key(i), derived_value(stable_key(i), i, i % 50)));

  const int writers = 3, readers = 3, ops = 8000 / kScale;
  const uint64_t key_space = 600;
  std::atomic<int> writers_done{0};
  std::atomic<uint64_t> errors{0}, lookups{0}, hits{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      try {
        std::mt19937_64 rng(500 + w);
        for (int op = 0; op < ops; ++op) {
          std::string k = key_of(rng() % key_space, w);
          if (rng() % 3 != 0) {
            tree.upsert(k, derived_value(k, rng() % 1000, rng() % 400));
          } else {
            tree.remove(k);
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "writer " << w << ": " << e.what();
        errors.fetch_add(1);
      }
      writers_done.fetch_add(1);
    });
  }
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&, r] {
      try {
        std::mt19937_64 rng(900 + r);
        std::string v;
        while (writers_done.load() < writers) {
          for (int i = 0; i < 50; ++i) {
            std::string k = key_of(rng() % key_space, static_cast<int>(rng() % writers));
            v = "untouched";
            bool found = tree.lookup(k, &v);
            lookups.fetch_add(1, std::memory_order_relaxed);
            if (found) hits.fetch_add(1, std::memory_order_relaxed);
            if (found ? !derived_value_ok(k, v) : v != "untouched") {
              ADD_FAILURE() << "lookup(" << k << ") found=" << found << " value " << v.substr(0, 80);
              errors.fetch_add(1);
            }
          }
          int s = static_cast<int>(rng() % stable);
          if (!tree.lookup(stable_key(s), &v) || v != derived_value(stable_key(s), s, s % 50)) {
            ADD_FAILURE() << "stable key " << stable_key(s);
            errors.fetch_add(1);
          }
          std::string prev;
          int n = 0;
          tree.scan(key_of(rng() % key_space, 0), [&](std::string_view k, std::string_view val) {
            if ((!prev.empty() && !(prev < k)) || !derived_value_ok(k, val)) errors.fetch_add(1);
            prev.assign(k);
            return ++n < 50;
          });
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "reader " << r << ": " << e.what();
        errors.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_GT(lookups.load(), hits.load());  // some lookups miss (removed or never written)
  ASSERT_NO_THROW(tree.check());
  PoolStats st = pool->stats();
  EXPECT_GT(testing::pages_pushed_out(st), 0u) << "the pool must be small enough to reuse frames";
  pool->check_invariants();
}

std::map<std::string, std::string> sample_contents(size_t n) {
  std::mt19937_64 rng(42);
  std::map<std::string, std::string> m;
  std::vector<std::string> keys = make_keys(rng, n);
  for (auto& k : keys) m[k] = random_value(rng, 60);
  return m;
}

// Opens the pool and the tree and compares every key; returns the number of mismatches.
int verify_reopened(const std::string& dir, const std::map<std::string, std::string>& model) {
  auto pool = BufferPool::open(small_options(dir, 16));
  BTree tree = BTree::open(*pool, "tree");
  int bad = 0;
  for (auto& [k, v] : model) {
    std::string got;
    if (!tree.lookup(k, &got) || got != v) ++bad;
  }
  if (tree.size() != model.size()) ++bad;
  try {
    tree.check();
  } catch (const std::exception&) {
    ++bad;
  }
  return bad;
}

TEST(BTree, PersistsAcrossPoolReopenAndProcesses) {
  TempDir dir;
  auto model = sample_contents(4000 / kScale);
  {
    auto pool = BufferPool::open(small_options(dir.path(), 16));
    BTree tree = BTree::create(*pool, "tree");
    for (auto& [k, v] : model) ASSERT_TRUE(tree.insert(k, v));
    tree.sync_metadata();
    pool->flush();
  }
  EXPECT_EQ(verify_reopened(dir.path(), model), 0);
  // A fresh process (fork, with no pool open in this one) reads the same tree.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(verify_reopened(dir.path(), model) == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(BTree, BulkLoadThenUpdates) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  BTree tree = BTree::create(*pool, "tree");
  const int n = 100000 / kScale;
  std::map<std::string, std::string> model;
  for (int i = 0; i < n; ++i) {
    char k[32];
    std::snprintf(k, sizeof k, "key%09d", i * 3);
    model[k] = std::to_string(i);
  }
  tree.bulk_load(model.begin(), model.end());
  ASSERT_NO_THROW(tree.check());
  ASSERT_EQ(tree.size(), model.size());
  for (int i = 0; i < n; i += 97) {
    char k[32];
    std::snprintf(k, sizeof k, "key%09d", i * 3);
    std::string v;
    ASSERT_TRUE(tree.lookup(k, &v)) << k;
    EXPECT_EQ(v, std::to_string(i));
  }
  std::mt19937_64 rng(5);
  for (int op = 0; op < 20000 / kScale; ++op) {
    char k[32];
    std::snprintf(k, sizeof k, "key%09d", static_cast<int>(rng() % (3 * n)));
    if (rng() % 2) {
      std::string v = random_value(rng, 30);
      ASSERT_EQ(tree.insert(k, v), model.emplace(k, v).second);
    } else {
      ASSERT_EQ(tree.remove(k), model.erase(k) == 1);
    }
  }
  ASSERT_NO_THROW(tree.check());
  expect_same(tree, model);
  expect_error(ErrorCode::kInvalidArgument, [&] { tree.bulk_load(model.begin(), model.end()); });
}

// fn may read the tree again from inside a scan (Order-Status scans one index and reads
// records in its callback): the nested reads reuse the thread's snapshot buffer, and the
// outer scan's views must still show its own leaf. Every entry of the outer scan is checked
// after a nested scan of a far key and a lookup.
TEST(BTree, ScanCallbackMayReadTheSameTreeAgain) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 256));
  BTree tree = BTree::create(*pool, "tree");
  std::map<std::string, std::string> model;
  for (int i = 0; i < 20000 / kScale; ++i) {
    char k[32];
    std::snprintf(k, sizeof k, "key%09d", i);
    model[k] = "value of " + std::string(k) + std::string(40, static_cast<char>('a' + i % 26));
  }
  tree.bulk_load(model.begin(), model.end());
  auto expected = model.begin();
  size_t seen = 0;
  tree.scan("", [&](std::string_view k, std::string_view v) {
    std::string far;
    tree.scan(std::prev(model.end())->first, [&](std::string_view fk, std::string_view) {
      far.assign(fk);
      return false;
    });
    std::string looked_up;
    EXPECT_TRUE(tree.lookup(model.begin()->first, &looked_up));
    EXPECT_EQ(far, std::prev(model.end())->first);
    EXPECT_EQ(k, expected->first);
    EXPECT_EQ(v, expected->second);
    ++expected;
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, model.size());
}

TEST(BTree, RemovesMergeUnderfullLeaves) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  BTree tree = BTree::create(*pool, "tree");
  std::mt19937_64 rng(9);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 5000; ++i) {  // not scaled: the test needs a few dozen leaves
    std::string k = "key/" + std::to_string(rng() % 1000000);
    std::string v = random_value(rng, 40);
    ASSERT_EQ(tree.insert(k, v), model.emplace(k, v).second);
  }
  BTree::CheckStats full = tree.check();
  EXPECT_GE(full.height, 2u);
  EXPECT_GT(full.leaves, 20u);
  size_t i = 0;
  for (auto it = model.begin(); it != model.end(); ++i) {
    if (i % 20 == 0) {
      ++it;
      continue;
    }
    ASSERT_TRUE(tree.remove(it->first));
    it = model.erase(it);
  }
  BTree::CheckStats sparse = tree.check();
  EXPECT_LT(sparse.leaves, full.leaves / 4) << "underfull leaves were not merged";
  EXPECT_GT(sparse.free_pages, 0u);
  expect_same(tree, model);
  for (auto& [k, v] : model) ASSERT_TRUE(tree.remove(k));
  model.clear();
  BTree::CheckStats empty = tree.check();
  EXPECT_EQ(empty.entries, 0u);
  expect_same(tree, model);
  ASSERT_TRUE(tree.insert("again", "1"));
  std::string v;
  ASSERT_TRUE(tree.lookup("again", &v));
  EXPECT_EQ(v, "1");
  ASSERT_NO_THROW(tree.check());
}

TEST(BTree, RejectsBadInput) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 32));
  BTree tree = BTree::create(*pool, "tree");
  std::string long_key(index::kMaxKeyBytes + 1, 'k');
  std::string long_value(index::kMaxValueBytes + 1, 'v');
  Error e = expect_error(ErrorCode::kInvalidArgument, [&] { tree.insert(long_key, "v"); });
  EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  e = expect_error(ErrorCode::kInvalidArgument, [&] { tree.upsert("k", long_value); });
  EXPECT_NE(std::string(e.what()).find("512"), std::string::npos) << e.what();
  expect_error(ErrorCode::kInvalidArgument, [&] { tree.insert("", "v"); });
  std::string out;
  expect_error(ErrorCode::kInvalidArgument, [&] { tree.lookup(long_key, &out); });
  // Maximal entries are fine, and many of them split correctly.
  for (int i = 0; i < 40; ++i) {
    std::string k(index::kMaxKeyBytes, 'a');
    k.replace(k.size() - 3, 3, std::to_string(100 + i));
    ASSERT_TRUE(tree.insert(k, std::string(index::kMaxValueBytes, 'x')));
  }
  ASSERT_NO_THROW(tree.check());
  EXPECT_EQ(tree.size(), 40u);
  // Unsorted bulk load into an empty tree: rejected before anything is written.
  BTree other = BTree::create(*pool, "other");
  std::vector<std::pair<std::string, std::string>> unsorted{{"b", "1"}, {"a", "2"}};
  expect_error(ErrorCode::kInvalidArgument, [&] { other.bulk_load(unsorted.begin(), unsorted.end()); });
  ASSERT_NO_THROW(other.check());
  // A space that is not a tree.
  SpaceId s = pool->create_space("plain");
  testing::fill_space(*pool, s, 3, [](uint64_t b) { return b; });
  expect_error(ErrorCode::kInvalidArgument, [&] { BTree::open(*pool, "plain"); });
  pool->create_space("empty");
  expect_error(ErrorCode::kInvalidArgument, [&] { BTree::open(*pool, "empty"); });
  expect_error(ErrorCode::kUnknownSpace, [&] { BTree::open(*pool, "missing"); });
}

}  // namespace
}  // namespace calico
