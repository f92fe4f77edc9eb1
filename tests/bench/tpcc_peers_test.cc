// TPC-C on the peers (bench/tpcc/peers/): WiredTiger and LMDB behind PeerTable. A peer
// table agrees with std::map under random operations; an update is atomic and runs its
// function once under concurrent writers (no lost update), concurrent removers of a key
// see exactly one success; per-thread engine state is reused by later threads; the load
// and a 2-thread run on 2 warehouses keep the clause 3.3.2 conditions; the subcommand runs
// the peers beside a translation and refuses index skipping on a peer and unknown systems.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/data_dir.h"
#include "support/test_util.h"
#include "tpcc/consistency.h"
#include "tpcc/loader.h"
#include "tpcc/peers/peer_store.h"
#include "tpcc/peers/peer_table.h"
#include "tpcc/run.h"
#include "tpcc/tpcc.h"
#include "tpcc/workload.h"

namespace calico {
namespace {

using namespace bench::tpcc;
using bench::tpcc::peers::open_peer_store;
using bench::tpcc::peers::PeerOptions;
using bench::tpcc::peers::PeerStore;
using testing::TempDir;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kRunTx = 300;
#else
constexpr uint64_t kRunTx = 1000;
#endif
constexpr double kTinyScale = 0.01;  // 30 customers per district, 1000 items

std::unique_ptr<PeerStore> open_store(const std::string& system, const TempDir& dir, unsigned max_threads = 4) {
  PeerOptions o;
  o.dir = dir.sub(system);
  std::filesystem::create_directories(o.dir);
  o.cache_bytes = 64 << 20;
  o.map_bytes = 1 << 30;
  o.max_threads = max_threads;
  return open_peer_store(system, o);
}

std::string describe(const Violations& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 10; ++i) s += v[i].to_string() + "\n";
  return s;
}

class TpccPeer : public ::testing::TestWithParam<std::string> {
 protected:
  // WiredTiger runs threads of its own (eviction, sweep) even under a one-thread test.
  void SetUp() override {
    if (calico::testing::kThreadSanitizer && GetParam() == "wiredtiger") {
      GTEST_SKIP() << "wiredtiger " << calico::testing::kUninstrumentedEngine;
    }
  }
};
INSTANTIATE_TEST_SUITE_P(Peers, TpccPeer, ::testing::Values("wiredtiger", "lmdb"),
                         [](const auto& info) { return info.param; });

// Random insert / read / update / remove / scan on two tables of one store against
// std::maps: every answer and every final content agree (keys of 1..3 bytes, so that scans
// start between, before and after keys; values of varying lengths).
TEST_P(TpccPeer, TableAgreesWithAMap) {
  TempDir dir;
  auto store = open_store(GetParam(), dir);
  PeerTable a = PeerTable::create(*store, "a", 0), b = PeerTable::create(*store, "b", 1);
  std::map<std::string, std::string> ma, mb;
  std::mt19937_64 rng(17);
  auto key = [&] {
    std::string k(1 + rng() % 3, '\0');
    for (char& c : k) c = static_cast<char>('a' + rng() % 6);
    return k;
  };
  RecordHint hint;
  for (int i = 0; i < 6000; ++i) {
    const bool on_a = rng() % 2;
    PeerTable& t = on_a ? a : b;
    auto& m = on_a ? ma : mb;
    const std::string k = key();
    switch (rng() % 5) {
      case 0: {
        const std::string v(1 + rng() % 40, static_cast<char>('A' + rng() % 26));
        ASSERT_EQ(t.insert(k, v), !m.count(k)) << k;
        m.emplace(k, v);
        break;
      }
      case 1: {
        std::string got;
        const bool found = t.read_value(k, &hint, &got);
        ASSERT_EQ(found, m.count(k) == 1) << k;
        if (found) {
          ASSERT_EQ(got, m[k]);
        }
        break;
      }
      case 2: {
        const bool found = t.update_value(k, &hint, [&](std::span<std::byte> v) {
          for (std::byte& x : v) x = static_cast<std::byte>(static_cast<uint8_t>(x) + 1);
        });
        ASSERT_EQ(found, m.count(k) == 1) << k;
        if (found) {
          for (char& c : m[k]) c = static_cast<char>(c + 1);
        }
        break;
      }
      case 3:
        ASSERT_EQ(t.remove(k), m.erase(k) == 1) << k;
        break;
      case 4: {
        const std::string start = rng() % 4 == 0 ? std::string() : key();
        const size_t limit = 1 + rng() % 8;
        std::vector<std::pair<std::string, std::string>> got, want;
        t.scan(start, [&](std::string_view gk, std::string_view gv) {
          got.emplace_back(gk, gv);
          return got.size() < limit;
        });
        for (auto it = m.lower_bound(start); it != m.end() && want.size() < limit; ++it) want.push_back(*it);
        ASSERT_EQ(got, want) << "scan from '" << start << "'";
        break;
      }
    }
  }
  EXPECT_TRUE(hint == RecordHint{});  // a peer leaves hints as they are
  for (auto [t, m] : {std::pair{&a, &ma}, std::pair{&b, &mb}}) {
    std::map<std::string, std::string> all;
    t->scan("", [&](std::string_view k, std::string_view v) { return all.emplace(k, v), true; });
    EXPECT_EQ(all, *m);
    EXPECT_EQ(t->size(), m->size());
  }
  // Typed rows: a record of the wrong length is an error naming the table.
  ASSERT_TRUE(a.insert("zz", "short"));
  WarehouseRow w;
  EXPECT_THROW(a.read("zz", &hint, &w), RowSizeError);
}

// Concurrent read-modify-writes of one record from 4 threads, each yielding the CPU between
// its read and its write (WiredTiger: write conflicts and their retries; LMDB: serialised
// writers), lose no update and run each function once (a read, then a separate write, loses
// about three quarters of the updates here);
// of 4 threads removing the same keys, exactly one succeeds per key.
TEST_P(TpccPeer, UpdatesAreAtomicAndRemovesClaimOnce) {
  TempDir dir;
  auto store = open_store(GetParam(), dir, 4);
  PeerTable t = PeerTable::create(*store, "t", 0);
  DistrictRow zero{};
  ASSERT_TRUE(t.insert_row("hot", zero));
  constexpr int kThreads = 4, kPerThread = 50, kKeys = 200;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(t.insert("k" + std::to_string(i), "x"));
  std::atomic<uint64_t> calls{0}, removed{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int n = 0; n < kThreads; ++n) {
    ts.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      RecordHint h;
      for (int i = 0; i < kPerThread; ++i) {
        t.update<DistrictRow>("hot", &h, [&](DistrictRow& r) {
          calls.fetch_add(1);
          const uint32_t seen = r.next_o_id;
          std::this_thread::yield();  // widens the read-to-write window for the other writers
          r.next_o_id = seen + 1;
          r.ytd_cents += 3;
        });
      }
      for (int i = 0; i < kKeys; ++i) removed += t.remove("k" + std::to_string(i));
    });
  }
  for (auto& th : ts) th.join();
  DistrictRow r;
  RecordHint h;
  ASSERT_TRUE(t.read("hot", &h, &r));
  EXPECT_EQ(r.next_o_id, uint32_t{kThreads * kPerThread});
  EXPECT_EQ(r.ytd_cents, int64_t{3 * kThreads * kPerThread});
  EXPECT_EQ(calls.load(), uint64_t{kThreads * kPerThread});
  EXPECT_EQ(removed.load(), uint64_t{kKeys});
  EXPECT_EQ(t.size(), 1u);
}

// Engine handles per thread are bounded by the threads alive at once: 60 threads, one after
// the other, each reading and writing, on a store sized for 1 thread (WiredTiger's
// session_max and LMDB's reader slots are threads + 16), reuse the exited threads' handles.
TEST_P(TpccPeer, ExitedThreadsHandlesAreReused) {
  TempDir dir;
  auto store = open_store(GetParam(), dir, 1);
  PeerTable t = PeerTable::create(*store, "t", 0);
  for (int i = 0; i < 60; ++i) {
    std::string error;
    std::thread th([&] {
      try {
        EXPECT_TRUE(t.insert("k" + std::to_string(i), "v"));
        std::string v;
        RecordHint h;
        EXPECT_TRUE(t.read_value("k" + std::to_string(i), &h, &v));
        EXPECT_EQ(v, "v");
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    th.join();
    ASSERT_EQ(error, "") << "thread " << i;
  }
  EXPECT_EQ(t.size(), 60u);
}

// The load and a 2-thread run on 2 warehouses keep every clause 3.3.2 condition, and every
// transaction type ran (remote payments and order lines cross the two warehouses).
TEST_P(TpccPeer, ConsistentAfterConcurrentRun) {
  TempDir dir;
  auto store = open_store(GetParam(), dir, 2);
  auto db = Database<PeerTable>::create(*store, Scale::make(2, kTinyScale));
  load(db, 2, 11, nullptr);
  store->after_load();
  Violations v = check_consistency(db);
  EXPECT_TRUE(v.empty()) << "after the load:\n" << describe(v);
  EXPECT_EQ(db.customer.size(), 2u * kDistricts * db.scale.customers);
  EXPECT_EQ(db.new_order.size(), 2u * kDistricts * db.scale.new_orders);
  RunSpec spec;
  spec.threads = 2;
  spec.seconds = 300;  // bounded by max_tx
  spec.max_tx = kRunTx;
  spec.seed = 5;
  RunResult r = run_workload(db, spec);
  EXPECT_EQ(r.tx, kRunTx);
  EXPECT_EQ(r.counters.failures, 0u) << r.counters.first_failure;
  for (size_t t = 0; t < kTxTypes; ++t) EXPECT_GT(r.counters.done[t], 0u) << kTxNames[t];
  EXPECT_GT(r.counters.remote_payments, 0u);
  EXPECT_GT(r.counters.by_name, 0u);
  EXPECT_EQ(r.pages_read + r.pages_written + r.evictions, 0u);  // no page counters (peer_store.h)
  v = check_consistency(db);
  EXPECT_TRUE(v.empty()) << "after the run:\n" << describe(v);
}

TEST_P(TpccPeer, RefusesIndexSkipping) {
  TempDir dir;
  auto store = open_store(GetParam(), dir);
  PeerTable t = PeerTable::create(*store, "t", 0);
  EXPECT_NO_THROW(t.set_index_skipping(false));
  try {
    t.set_index_skipping(true);
    ADD_FAILURE() << "accepted index skipping";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("index skipping is Calico's"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(GetParam()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(t.index_skipping());
}

TEST(TpccPeerStore, RejectsAnUnknownSystem) {
  TempDir dir;
  EXPECT_THROW(open_store("rocksdb", dir), std::invalid_argument);
}

// ---- The subcommand --------------------------------------------------------------------------

bench::TpccConfig tiny_config(const TempDir& dir) {
  bench::TpccConfig c;
  c.translations = {"array", "wiredtiger", "lmdb"};
  c.warehouses = 2;
  c.threads = {2};
  c.scale = kTinyScale;
  c.max_tx = 300;
  c.seconds = 300;
  c.data_dir = dir.sub("data");
  c.quiet = true;
  return c;
}

TEST(TpccPeersCommand, RunsThePeersBesideATranslation) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  c.json_path = dir.sub("out.jsonl");
  c.repeat = 2;  // the peers' directories are made again (and removed) per repeat
  // Under TSan without wiredtiger (tests/support/test_util.h, kUninstrumentedEngine).
  const bool with_wiredtiger = !calico::testing::kThreadSanitizer;
  if (!with_wiredtiger) c.translations = {"array", "lmdb"};
  EXPECT_EQ(bench::run_tpcc(c), 0);
  std::ifstream in(c.json_path);
  std::string line;
  std::map<std::string, int> systems;
  while (std::getline(in, line)) {
    EXPECT_NE(line.find(R"("violations":0,"failures":0)"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("tx":300,)"), std::string::npos) << line;
    for (const char* s : {"calico", "wiredtiger", "lmdb"}) {
      systems[s] += line.find(std::string(R"("system":")") + s + "\"") != std::string::npos;
    }
  }
  EXPECT_EQ(systems["calico"], 2);
  EXPECT_EQ(systems["wiredtiger"], with_wiredtiger ? 2 : 0);
  EXPECT_EQ(systems["lmdb"], 2);
  EXPECT_FALSE(std::filesystem::exists(c.data_dir + "/wiredtiger"));
  EXPECT_FALSE(std::filesystem::exists(c.data_dir + "/lmdb"));
}

TEST(TpccPeersCommand, RefusesIndexSkippingOnAPeerAndUnknownSystems) {
  TempDir dir;
  auto expect_invalid = [&](bench::TpccConfig c, const std::string& words) {
    try {
      bench::run_tpcc(c);
      ADD_FAILURE() << "accepted; expected an error naming " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  bench::TpccConfig c = tiny_config(dir);
  c.index_skipping = {"off", "on"};
  expect_invalid(c, "--index-skipping on (or remember) cannot run on a peer");
  c.index_skipping = {"remember"};
  expect_invalid(c, "--index-skipping on (or remember) cannot run on a peer");
  c.index_skipping = {"off", "on"};
  c.translations = {"lmdb"};
  c.index_skipping = {"on"};
  expect_invalid(c, "--index-skipping on (or remember) cannot run on a peer");
  c.index_skipping = {"remember"};
  expect_invalid(c, "--index-skipping on (or remember) cannot run on a peer");
  c.index_skipping = {"off", "on"};
  c = tiny_config(dir);
  c.translations = {"array", "rocksdb"};
  expect_invalid(c, "unknown translation or system 'rocksdb'");
  expect_invalid(c, "peers: wiredtiger, lmdb");
  c.translations = {};
  expect_invalid(c, "nothing to run");
  EXPECT_FALSE(std::filesystem::exists(dir.sub("data")));  // nothing was created
}

// A peer's data directory that is not the bench's is refused and left as it was.
TEST(TpccPeersCommand, RefusesADataDirectoryThatIsNotOurs) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  c.translations = {"wiredtiger"};
  std::filesystem::create_directories(c.data_dir + "/wiredtiger");
  std::ofstream(c.data_dir + "/wiredtiger/precious.txt") << "not the bench's";
  EXPECT_THROW(bench::run_tpcc(c), bench::BenchDirError);
  EXPECT_TRUE(std::filesystem::exists(c.data_dir + "/wiredtiger/precious.txt"));
}

}  // namespace
}  // namespace calico
