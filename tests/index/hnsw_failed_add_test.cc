// HNSW (include/calico/index/hnsw.h) when an add fails part-way: a pool error (an I/O error, a full
// pool) thrown at any step of add() leaves the index searchable and consistent
// (check_structure), and the id either free (the error came before the node was written) or
// recorded as a failed add that add() completes when called again.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/hnsw.h"
#include "io/fault_injector.h"
#include "support/test_util.h"
#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico {
namespace {

using index::BasicHnsw;
using index::HnswMeta;
using index::HnswParams;
using index::HnswSearchOptions;
using index::HnswSearchState;
using testing::small_options;
using testing::TempDir;
using vector::Metric;
using vector::Neighbor;
using Hnsw = BasicHnsw<BufferPool>;

// Fails every page transfer and every file extension from the n-th one after arm(n) on
// (counting from 0), until disarm(). Counts what it saw while armed.
class FailFrom : public io::FaultInjector {
 public:
  void arm(uint64_t n) {
    seen_.store(0);
    failed_.store(0);
    from_.store(n);
    armed_.store(true);
  }
  void disarm() { armed_.store(false); }
  uint64_t failed() const { return failed_.load(); }

  int on_complete(bool, int, uint64_t, uint32_t, int result) override { return fail() ? -EIO : result; }
  int on_extend(int, uint64_t) override { return fail() ? -ENOSPC : 0; }

 private:
  bool fail() {
    if (!armed_.load()) return false;
    if (seen_.fetch_add(1) < from_.load()) return false;
    failed_.fetch_add(1);
    return true;
  }
  std::atomic<bool> armed_{false};
  std::atomic<uint64_t> seen_{0}, failed_{0}, from_{0};
};

// Fails each page transfer with probability 1/`one_in` while armed (seeded; any thread).
class RandomFailures : public io::FaultInjector {
 public:
  RandomFailures(uint64_t seed, uint32_t one_in) : rng_(seed), one_in_(one_in) {}
  std::atomic<bool> armed{false};
  int on_complete(bool, int, uint64_t, uint32_t, int result) override {
    if (!armed.load()) return result;
    std::lock_guard lock(mu_);
    return rng_() % one_in_ == 0 ? -EIO : result;
  }

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;
  uint32_t one_in_;
};

// n vectors of dimension dim on a random 4-dimensional subspace (seeded): easy for HNSW even
// at M 4, so that a search for a node's own vector finds it unless the graph lost the node.
// Holds the first page transfer after arm() until release(): a thread stopped inside an add.
class HoldFirstTransfer : public io::FaultInjector {
 public:
  void arm() { armed_.store(true); }
  // Waits (bounded) until a transfer is held; false if none came within 20 s.
  bool wait_held() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int on_complete(bool, int, uint64_t, uint32_t, int result) override {
    if (!armed_.exchange(false)) return result;
    std::unique_lock lock(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return released_; });  // watchdog: never hang the suite
    return result;
  }

 private:
  std::atomic<bool> armed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, released_ = false;
};

std::vector<float> random_vectors(uint32_t n, uint32_t dim, uint64_t seed) {
  constexpr uint32_t kLatent = 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> basis(size_t{kLatent} * dim);
  for (float& x : basis) x = d(rng);
  std::vector<float> v(size_t{n} * dim, 0.0f);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t k = 0; k < kLatent; ++k) {
      const float c = d(rng);
      for (uint32_t j = 0; j < dim; ++j) v[size_t{i} * dim + j] += c * basis[size_t{k} * dim + j];
    }
  }
  return v;
}

constexpr uint32_t kDim = 64;  // 13 nodes per page at M 4: the index far outgrows the pool
constexpr uint32_t kM = 4;     // a quarter of the nodes above level 0: upper lists, raised levels

// The distance the index reports (its kernel, bit for bit).
float l2(const float* a, const float* b) { return vector::distance_kernel(Metric::kL2)(a, b, kDim); }

// Each of `ids` is found by a search for its own vector, at distance 0, and every result of
// those searches names a present node at its exact distance.
void expect_found(const Hnsw& h, const std::vector<float>& data, const std::vector<uint32_t>& ids) {
  HnswSearchState st(h);
  std::vector<Neighbor> res;
  uint32_t found = 0;
  for (uint32_t id : ids) {
    const float* q = &data[size_t{id} * kDim];
    h.search(q, HnswSearchOptions{10, 64, true, true}, st, &res);
    ASSERT_FALSE(res.empty());
    for (const Neighbor& r : res) {
      ASSERT_TRUE(h.contains(r.id)) << r.id;
      ASSERT_EQ(r.distance, l2(q, &data[size_t{r.id} * kDim])) << "id " << r.id;
    }
    found += res.front().id == id && res.front().distance == 0.0f;
  }
  EXPECT_GE(found * 20, ids.size() * 19) << found << " of " << ids.size() << " nodes found by their own vector";
}

// The k-th page transfer (or file extension) of an add fails, for every k from 0 until an add
// completes with fewer: the error reaches the caller as a calico::Error, and then
//   - check_structure() holds and searches find the nodes added before;
//   - the id is free (the failure came before its record was written) or a failed add
//     (failed_adds(), contains, not counted by size), and add(id) again completes it;
//   - after that add, the id is counted and found.
// Before failed adds were recorded, the first error after the claim left a node that
// check_structure reported ("size N but N+1 nodes") and whose id add() refused for good.
TEST(HnswFailedAdd, AnIoErrorAtEveryStepLeavesAConsistentIndexAndARetriableId) {
  TempDir dir;
  FailFrom disk;
  PoolOptions o = small_options(dir.path(), 12);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  constexpr uint32_t kSeeded = 150, kCapacity = 600;
  const std::vector<float> data = random_vectors(kCapacity, kDim, 3);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, kCapacity);
  for (uint32_t i = 0; i < kSeeded; ++i) h.add(i, &data[size_t{i} * kDim]);
  ASSERT_NO_THROW(h.check_structure());
  std::vector<uint32_t> added(kSeeded);
  for (uint32_t i = 0; i < kSeeded; ++i) added[i] = i;
  std::vector<uint32_t> probe;  // a sample of the added ids, searched after every failure
  for (uint32_t i = 0; i < kSeeded; i += 10) probe.push_back(i);

  uint32_t failures = 0, failed_after_claim = 0, failed_upper = 0;
  uint32_t next = kSeeded;
  for (uint64_t k = 0;; ++k) {
    ASSERT_LT(next, kCapacity) << "the adds never got past " << k << " transfers";
    const uint32_t id = next++;
    const float* v = &data[size_t{id} * kDim];
    SCOPED_TRACE("transfer " + std::to_string(k) + " of the add of id " + std::to_string(id) + " (level " +
                 std::to_string(h.level_of(id)) + ") fails");
    const uint32_t size_before = h.size();
    disk.arm(k);
    bool threw = false;
    try {
      h.add(id, v);
    } catch (const Error& e) {
      threw = true;
      EXPECT_TRUE(e.code() == ErrorCode::kIoError || e.code() == ErrorCode::kPoolFull) << e.what();
    }
    disk.disarm();
    if (!threw) {
      if (disk.failed() > 0) continue;  // a prefetch failed, the add read the page again
      // The add needed fewer than k transfers: every step has failed once.
      EXPECT_GT(k, 10u) << "an add needs more than a few transfers in a pool this small";
      break;
    }
    ++failures;
    ASSERT_NO_THROW(h.check_structure());
    EXPECT_EQ(h.size(), size_before);
    const std::vector<uint32_t> failed = h.failed_adds();
    if (failed.empty()) {
      EXPECT_FALSE(h.contains(id)) << "a node present after a failed add must be a failed add";
    } else {
      EXPECT_EQ(failed, std::vector<uint32_t>{id});
      EXPECT_TRUE(h.contains(id));
      ++failed_after_claim;
      failed_upper += h.level_of(id) > 0;
    }
    expect_found(h, data, probe);
    if (::testing::Test::HasFailure()) return;
    // The retry completes the insertion (or, had the record not been written, makes it).
    ASSERT_NO_THROW(h.add(id, v));
    EXPECT_TRUE(h.failed_adds().empty());
    EXPECT_EQ(h.size(), size_before + 1);
    added.push_back(id);
    if (failures % 4 == 0) {  // each check costs ~0.1 s here
      ASSERT_NO_THROW(h.check_structure());
    }
    expect_found(h, data, {id});
    // Adding it a third time is a duplicate.
    testing::expect_error(ErrorCode::kInvalidArgument, [&] { h.add(id, v); });
  }
  std::printf("hnsw failed adds: %u failures (%u after the claim, %u of them with upper levels)\n", failures,
              failed_after_claim, failed_upper);
  EXPECT_GT(failed_after_claim, 10u) << "of " << failures << " failures";
  EXPECT_GT(failed_upper, 0u) << "no failure hit a node with upper levels";
  ASSERT_NO_THROW(h.check_structure());
  expect_found(h, data, added);
  pool->check_invariants();
}

// A failed add is resumed only with its own vector; with another it is refused and stays a
// failed add.
TEST(HnswFailedAdd, ARetryWithAnotherVectorIsRefused) {
  TempDir dir;
  FailFrom disk;
  PoolOptions o = small_options(dir.path(), 12);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  const std::vector<float> data = random_vectors(300, kDim, 4);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, 300);
  for (uint32_t i = 0; i < 200; ++i) h.add(i, &data[size_t{i} * kDim]);
  // Fail later and later transfers until an add fails with its node present.
  uint32_t id = 200;
  for (uint64_t k = 0; h.failed_adds().empty(); ++k, ++id) {
    ASSERT_LT(id, 300u);
    disk.arm(k);
    try {
      h.add(id, &data[size_t{id} * kDim]);
    } catch (const Error&) {
    }
    disk.disarm();
  }
  const uint32_t failed = h.failed_adds().front();
  testing::expect_error(ErrorCode::kInvalidArgument, [&] { h.add(failed, &data[0]); });
  EXPECT_EQ(h.failed_adds(), std::vector<uint32_t>{failed});
  ASSERT_NO_THROW(h.check_structure());
  h.add(failed, &data[size_t{failed} * kDim]);
  EXPECT_TRUE(h.failed_adds().empty());
  ASSERT_NO_THROW(h.check_structure());
}

// Every frame pinned by another space: the add cannot fault its first page (kPoolFull), the
// id stays free, and once the pins are gone it is added.
TEST(HnswFailedAdd, AFullPoolLeavesTheIdFree) {
  TempDir dir;
  PoolOptions o = small_options(dir.path(), 12);
  auto pool = BufferPool::open(o);
  const std::vector<float> data = random_vectors(300, kDim, 5);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, 300);
  for (uint32_t i = 0; i < 200; ++i) h.add(i, &data[size_t{i} * kDim]);
  SpaceId other = pool->create_space("other");
  std::vector<SharedGuard> pins;
  {
    std::vector<ExclusiveGuard> fill;
    for (int i = 0; i < 12; ++i) fill.push_back(pool->allocate(other));  // every frame, latched
    for (ExclusiveGuard& g : fill) g.mark_dirty();
  }
  for (BlockId b = 0; b < 12; ++b) pins.push_back(pool->pin_shared(PageId(other, b)));
  testing::expect_error(ErrorCode::kPoolFull, [&] { h.add(200, &data[200 * kDim]); });
  pins.clear();
  EXPECT_FALSE(h.contains(200));
  EXPECT_TRUE(h.failed_adds().empty());
  ASSERT_NO_THROW(h.check_structure());
  h.add(200, &data[200 * kDim]);
  EXPECT_EQ(h.size(), 201u);
  ASSERT_NO_THROW(h.check_structure());
  expect_found(h, data, {0, 50, 100, 150, 200});
}

// A growth that fails (the pool full: no frame for the extent's first page) leaves the
// capacity as it was and the index searchable; the add that needed it is refused with the
// id free, and succeeds once frames are free again.
TEST(HnswFailedAdd, AFailedGrowthLeavesTheCapacity) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 12));
  const std::vector<float> data = random_vectors(300, kDim, 8);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, 10);
  const uint32_t cap = h.capacity();
  for (uint32_t i = 0; i < cap; ++i) h.add(i, &data[size_t{i} * kDim]);
  const uint64_t size = h.size();
  SpaceId other = pool->create_space("other");
  {  // every frame pinned: the extent's first page finds none
    std::vector<SharedGuard> pins;
    {
      std::vector<ExclusiveGuard> fill;
      for (int i = 0; i < 12; ++i) fill.push_back(pool->allocate(other));
      for (ExclusiveGuard& g : fill) g.mark_dirty();
    }
    for (BlockId b = 0; b < 12; ++b) pins.push_back(pool->pin_shared(PageId(other, b)));
    testing::expect_error(ErrorCode::kPoolFull, [&] { h.add(cap, &data[size_t{cap} * kDim]); });
  }
  EXPECT_EQ(h.capacity(), cap);
  EXPECT_EQ(h.size(), size);
  ASSERT_NO_THROW(h.check_structure());
  expect_found(h, data, {0, cap / 2, cap - 1});
  for (uint32_t i = cap; i < 3 * cap; ++i) h.add(i, &data[size_t{i} * kDim]);
  EXPECT_GE(h.capacity(), 3 * cap);
  EXPECT_EQ(h.size(), 3 * cap);
  ASSERT_NO_THROW(h.check_structure());
  expect_found(h, data, {0, cap, 2 * cap, 3 * cap - 1});
}

// An add of an id while another add of it runs (stopped at its first page read) is refused
// with kInvalidArgument, and the first completes.
TEST(HnswFailedAdd, ASecondAddOfAnIdThatIsBeingAddedIsRefused) {
  TempDir dir;
  HoldFirstTransfer disk;
  PoolOptions o = small_options(dir.path(), 12);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  const std::vector<float> data = random_vectors(300, kDim, 9);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, 300);
  for (uint32_t i = 0; i < 100; ++i) h.add(i, &data[size_t{i} * kDim]);
  SpaceId other = pool->create_space("other");
  testing::fill_space(*pool, other, 24, [](uint64_t b) { return b + 1; });  // twice the frames: no index page stays
  constexpr uint32_t kId = 299;  // on a page no add has touched
  disk.arm();
  std::thread first([&] { h.add(kId, &data[size_t{kId} * kDim]); });
  const bool held = disk.wait_held();
  if (held) {
    Error e = testing::expect_error(ErrorCode::kInvalidArgument, [&] { h.add(kId, &data[size_t{kId} * kDim]); });
    EXPECT_NE(std::string(e.what()).find("being added"), std::string::npos) << e.what();
  }
  disk.release();
  first.join();
  ASSERT_TRUE(held) << "the first add read no page";
  EXPECT_TRUE(h.contains(kId));
  EXPECT_EQ(h.size(), 101u);
  EXPECT_TRUE(h.failed_adds().empty());
  ASSERT_NO_THROW(h.check_structure());
}

// Format 2 (upper pages allocated one at a time after the first level-0 extent): the
// space ends past the upper pages the metadata counts, as after an upper-page allocation
// whose metadata update failed: the next allocation takes that zero page over instead of
// reporting the index corrupt. A page there that holds data is still reported.
TEST(HnswFailedAdd, AnUpperPageTheMetadataDoesNotCountIsTakenOver) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 64));
  const std::vector<float> data = random_vectors(200, kDim, 6);
  // An empty index of format 2: create()'s, its version set back (the formats agree on
  // everything but the extent table, which format 2 does not read).
  auto create_v2 = [&](const char* name) {
    const SpaceId space = Hnsw::create(*pool, name, HnswParams{kDim, Metric::kL2, kM, 32, 7}, 200).space();
    ExclusiveGuard g = pool->pin_exclusive(PageId(space, 0));
    const uint32_t two = 2;
    std::memcpy(g.data() + offsetof(HnswMeta, format_version), &two, 4);
    g.mark_dirty();
    g = ExclusiveGuard();
    return Hnsw::open(*pool, name);
  };
  Hnsw h = create_v2("hnsw");
  {
    ExclusiveGuard g = pool->allocate(h.space());  // the first upper page, uncounted
    ASSERT_EQ(g.page_id().block(), h.layout().upper_base);
  }
  for (uint32_t i = 0; i < 200; ++i) h.add(i, &data[size_t{i} * kDim]);
  EXPECT_EQ(h.size(), 200u);
  ASSERT_NO_THROW(h.check_structure());
  std::vector<uint32_t> all(200);
  for (uint32_t i = 0; i < 200; ++i) all[i] = i;
  expect_found(h, data, all);

  Hnsw h2 = create_v2("hnsw2");
  {
    ExclusiveGuard g = pool->allocate(h2.space());
    std::memset(g.data(), 0x5A, 64);
    g.mark_dirty();
  }
  uint32_t id = 0;
  for (; h2.level_of(id) == 0; ++id) h2.add(id, &data[size_t{id} * kDim]);  // no upper lists yet
  Error e = testing::expect_error(ErrorCode::kCorruptPage, [&] { h2.add(id, &data[size_t{id} * kDim]); });
  EXPECT_EQ(e.page(), PageId(h2.space(), 0)) << e.what();
}

// Three threads add while two search, and page transfers fail at random (1 in 40): every add
// either completes or throws a calico::Error, every search result is a node at its exact
// distance; afterwards, with the faults off, adding the failed ids again completes the index.
TEST(HnswFailedAdd, ConcurrentAddsAndSearchesWithRandomIoErrors) {
  TempDir dir;
  RandomFailures disk(11, 40);
  PoolOptions o = small_options(dir.path(), 16);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  constexpr uint32_t kN = 600, kSeeded = 50, kAdders = 3;
  const std::vector<float> data = random_vectors(kN, kDim, 8);
  Hnsw h = Hnsw::create(*pool, "hnsw", HnswParams{kDim, Metric::kL2, kM, 32, 7}, kN);
  for (uint32_t i = 0; i < kSeeded; ++i) h.add(i, &data[size_t{i} * kDim]);
  disk.armed = true;
  std::atomic<uint32_t> adders_done{0};
  std::atomic<uint64_t> add_errors{0}, search_errors{0}, searches{0}, bad{0}, other_errors{0};
  std::vector<std::vector<uint32_t>> retry(kAdders);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kAdders; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = kSeeded + t; i < kN; i += kAdders) {
        try {
          h.add(i, &data[size_t{i} * kDim]);
        } catch (const Error&) {
          add_errors.fetch_add(1);
          retry[t].push_back(i);
        } catch (...) {
          other_errors.fetch_add(1);
        }
      }
      adders_done.fetch_add(1);
    });
  }
  for (uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      HnswSearchState st(h);
      std::vector<Neighbor> res;
      for (uint32_t i = t; adders_done.load() < kAdders; i += 2) {
        const float* q = &data[size_t{i % kN} * kDim];
        try {
          h.search(q, HnswSearchOptions{10, 32, i % 3 != 0, i % 2 == 0}, st, &res);
        } catch (const Error&) {
          search_errors.fetch_add(1);
          continue;
        } catch (...) {
          other_errors.fetch_add(1);
          continue;
        }
        searches.fetch_add(1);
        for (const Neighbor& r : res) {
          if (r.id >= kN || r.distance != l2(q, &data[size_t{r.id} * kDim])) bad.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  disk.armed = false;
  EXPECT_EQ(other_errors.load(), 0u);
  EXPECT_EQ(bad.load(), 0u) << "of " << searches.load() << " searches";
  EXPECT_GT(add_errors.load(), 0u) << "no add failed: the test tests nothing";
  ASSERT_NO_THROW(h.check_structure());
  std::vector<uint32_t> failed = h.failed_adds();
  for (const std::vector<uint32_t>& ids : retry) {
    for (uint32_t id : ids) {
      if (!std::binary_search(failed.begin(), failed.end(), id)) {
        EXPECT_FALSE(h.contains(id)) << id;
      }
      h.add(id, &data[size_t{id} * kDim]);
    }
  }
  EXPECT_TRUE(h.failed_adds().empty());
  EXPECT_EQ(h.size(), kN);
  ASSERT_NO_THROW(h.check_structure());
  std::vector<uint32_t> sample;
  for (uint32_t i = 0; i < kN; i += 3) sample.push_back(i);
  expect_found(h, data, sample);
  pool->check_invariants();
  std::printf("hnsw failed adds: %llu add errors, %llu search errors, %llu searches\n",
              static_cast<unsigned long long>(add_errors.load()), static_cast<unsigned long long>(search_errors.load()),
              static_cast<unsigned long long>(searches.load()));
}

}  // namespace
}  // namespace calico
