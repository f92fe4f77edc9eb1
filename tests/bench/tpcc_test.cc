// TPC-C driver tests (bench/tpcc/): the random input against the spec, the load and a
// multi-threaded run on every evicting translation with a tiny pool (eviction on every
// transaction) and once in memory, each followed by the clause 3.3.2 consistency checks;
// the checker catching corruption; bad input to the subcommand.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/data_dir.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "tpcc/consistency.h"
#include "tpcc/loader.h"
#include "tpcc/run.h"
#include "tpcc/tpcc.h"
#include "tpcc/workload.h"

namespace calico {
namespace {

using namespace bench::tpcc;
using testing::small_options;
using testing::TempDir;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kRunTx = 400;
#else
constexpr uint64_t kRunTx = 1200;
#endif
constexpr double kTinyScale = 0.01;  // 30 customers per district, 1000 items

std::string describe(const Violations& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 10; ++i) s += v[i].to_string() + "\n";
  return s;
}

bool reported(const Violations& v, const std::string& condition, uint32_t w, uint32_t d) {
  return std::any_of(v.begin(), v.end(),
                     [&](const Violation& x) { return x.condition == condition && x.w == w && x.d == d; });
}

// ---- Random input against the spec -------------------------------------------------------

TEST(TpccRandom, LastNamesFollowTheSyllables) {
  // Clause 4.3.2.3: the three digits of the number pick the syllables; its example is 371.
  EXPECT_EQ(last_name(371), "PRICALLYOUGHT");
  EXPECT_EQ(last_name(0), "BARBARBAR");
  EXPECT_EQ(last_name(999), "EINGEINGEING");
  const char* syl[] = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"};
  std::set<std::string> distinct;
  for (uint32_t n = 0; n <= 999; ++n) {
    const std::string want = std::string(syl[n / 100]) + syl[n / 10 % 10] + syl[n % 10];
    ASSERT_EQ(last_name(n), want) << n;
    ASSERT_LE(want.size(), kNameBytes);
    distinct.insert(want);
  }
  EXPECT_EQ(distinct.size(), 1000u);
}

TEST(TpccRandom, NURandIsTheSpecFormulaWithValidConstants) {
  // Clause 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
  Random a(123), b(123);
  for (int i = 0; i < 10000; ++i) {
    const uint32_t got = a.nurand(kCIdA, 1, 3000, kCIdC);
    const uint32_t r1 = b.uniform(0, kCIdA), r2 = b.uniform(1, 3000);
    ASSERT_EQ(got, ((r1 | r2) + kCIdC) % 3000 + 1);
    ASSERT_GE(got, 1u);
    ASSERT_LE(got, 3000u);
  }
  EXPECT_EQ(kCLastA, 255u);
  EXPECT_EQ(kCIdA, 1023u);
  EXPECT_EQ(kOlIIdA, 8191u);
  EXPECT_LE(kCLastLoadC, 255u);
  EXPECT_LE(kCLastRunC, 255u);
  EXPECT_LE(kCIdC, 1023u);
  EXPECT_LE(kOlIIdC, 8191u);
  // Clause 2.1.6.1: the run's C for C_LAST differs from the load's by 65..119, not 96 or 112.
  const uint32_t delta = kCLastRunC > kCLastLoadC ? kCLastRunC - kCLastLoadC : kCLastLoadC - kCLastRunC;
  EXPECT_GE(delta, 65u);
  EXPECT_LE(delta, 119u);
  EXPECT_NE(delta, 96u);
  EXPECT_NE(delta, 112u);
  // Non-uniform: C_LAST numbers drawn by NURand(255, 0, 999) concentrate far above 1/1000.
  Random r(7);
  std::map<uint32_t, int> counts;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const uint32_t n = r.nurand(kCLastA, 0, 999, kCLastRunC);
    ASSERT_LE(n, 999u);
    counts[n]++;
  }
  int top = 0;
  for (auto& [n, c] : counts) top = std::max(top, c);
  EXPECT_GT(top, 3 * draws / 1000);
}

TEST(TpccScale, FullScaleIsTheSpecsCardinalities) {
  const Scale s = Scale::make(3, 1.0);
  EXPECT_EQ(s.customers, 3000u);
  EXPECT_EQ(s.items, 100000u);
  EXPECT_EQ(s.new_orders, 900u);
  EXPECT_EQ(s.first_new_order(), 2101u);  // orders 2101..3000 are undelivered
  EXPECT_EQ(s.name_numbers(), 1000u);
  const Scale t = Scale::make(1, kTinyScale);
  EXPECT_EQ(t.customers, 30u);
  EXPECT_EQ(t.items, 1000u);
  EXPECT_EQ(t.new_orders, 9u);
  EXPECT_THROW(Scale::make(0, 1.0), std::invalid_argument);
  EXPECT_THROW(Scale::make(1, 0.0), std::invalid_argument);
  EXPECT_THROW(Scale::make(1, 1.5), std::invalid_argument);
}

// ---- Load, run, check ------------------------------------------------------------------------

// Loads `warehouses` at the tiny scale, checks, runs kRunTx transactions with `threads`
// workers, checks again (consistency and every tree's structure). Returns the run.
template <class Pool>
RunResult load_run_check(Pool& pool, uint32_t warehouses, unsigned threads, bool index_skipping = false,
                         bool remember_hints = false) {
  auto db = CalicoDatabase<Pool>::create(pool, Scale::make(warehouses, kTinyScale));
  db.set_index_skipping(index_skipping);
  load(db, threads, 11, nullptr);
  Violations v = check_consistency(db);
  EXPECT_TRUE(v.empty()) << "after the load:\n" << describe(v);
  RunSpec spec;
  spec.threads = threads;
  spec.seconds = 300;  // bounded by max_tx
  spec.max_tx = kRunTx;
  spec.seed = 5;
  spec.remember_hints = remember_hints;
  RunResult r = run_workload(db, spec);
  EXPECT_EQ(r.tx, kRunTx);
  EXPECT_EQ(r.counters.failures, 0u) << r.counters.first_failure;
  for (size_t t = 0; t < kTxTypes; ++t) EXPECT_GT(r.counters.done[t], 0u) << kTxNames[t];
  EXPECT_GT(r.counters.remote_payments, 0u);
  EXPECT_GT(r.counters.by_name, 0u);
  v = check_consistency(db);
  EXPECT_TRUE(v.empty()) << "after the run:\n" << describe(v);
  for (Table<Pool>* t : db.tables()) EXPECT_NO_THROW(t->tree().check()) << t->name();
  return r;
}

template <class Pool>
class TpccOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(TpccOnEveryTranslation, testing::IndexPools, testing::PoolName);

// 3 threads on 3 warehouses in a pool of 64 frames (the database is ~20x larger): pages are
// evicted and read back in every transaction, remote New-Order lines and Payments cross
// warehouses, and the clause 3.3.2 conditions must hold afterwards.
TYPED_TEST(TpccOnEveryTranslation, ConsistentAfterConcurrentRunWithEviction) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  RunResult r = load_run_check(*pool, 3, 3);
  EXPECT_GT(r.evictions, kRunTx);  // more than one per transaction
}

// Index skipping (table.h): every read and update of a primary record starts at its hint
// (from the secondary index entry or the transaction's earlier access), under eviction on
// array (the combination none of the papers measured) and lipah; hints must be followed
// (hits) and the run must stay consistent. (Whether a hint goes stale during so short a run
// is chance: the load leaves them exact. Every kind of staleness is forced in
// tests/index/btree_hint_test.cc.)
template <class Pool>
void consistent_with_index_skipping() {
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 64));
  RunResult r = load_run_check(*pool, 3, 3, /*index_skipping=*/true);
  EXPECT_GT(r.evictions, kRunTx);
  index::HintStats all;
  for (const index::HintStats& h : r.hints) all += h;
  EXPECT_GT(all.hits, 0u);
  EXPECT_GT(all.calls(), kRunTx);
}
TEST(TpccIndexSkipping, ConsistentUnderEvictionOnArray) { consistent_with_index_skipping<BufferPool>(); }

// The workers' hint memory (hint_memory.h): records read and updated by id (items, stock,
// warehouse, district) start at the leaf the terminal saw last time. Without it those
// accesses carry no hint at all (none of them goes through a secondary index); with it the
// repeated ones are answered without a descent, under eviction the stale ones fall back, and the run stays
// consistent.
TEST(TpccIndexSkipping, RememberedHintsSkipTheDescentsOfRecordsAccessedById) {
  for (bool remember : {false, true}) {
    TempDir dir;
    auto pool = BufferPool::open(small_options(dir.path(), 64));
    RunResult r = load_run_check(*pool, 3, 3, /*index_skipping=*/true, remember);
    EXPECT_GT(r.evictions, kRunTx);
    // Table ids: database.h's order (warehouse 0, district 1, ..., item 7, stock 8).
    const index::HintStats& item = r.hints[7];
    const index::HintStats& stock = r.hints[8];
    if (!remember) {
      EXPECT_EQ(item.hits + stock.hits, 0u) << "no hint can reach an item or stock access without the memory";
    } else {
      EXPECT_GT(item.hits, 0u);
      EXPECT_GT(stock.hits, 0u);
    }
  }
}
TEST(TpccIndexSkipping, ConsistentUnderEvictionOnLipah) {
  consistent_with_index_skipping<BasicBufferPool<translation::LipahTranslation>>();
}

// After the load every secondary entry's hint names its primary record's leaf and slot
// exactly (the loader's insert-time hints go stale as later inserts split those leaves;
// load() refreshes them), so that index skipping starts with valid hints.
TEST(TpccIndexSkipping, LoadLeavesEverySecondaryHintExact) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 8192));
  auto db = CalicoDatabase<BufferPool>::create(*pool, Scale::make(2, kTinyScale));
  load(db, 2, 5, nullptr);
  const std::pair<Table<BufferPool>*, Table<BufferPool>*> indexes[] = {{&db.customer_name, &db.customer},
                                                                       {&db.order_customer, &db.order}};
  for (auto [secondary, primary] : indexes) {
    std::vector<std::pair<std::string, std::string>> entries;
    secondary->scan("", [&](std::string_view k, std::string_view v) {
      entries.emplace_back(std::string(k), std::string(v));
      return true;
    });
    ASSERT_EQ(entries.size(), primary->size()) << secondary->name();
    index::HintStats stats;
    std::string row;
    for (const auto& [k, v] : entries) {
      SecondaryValue sv;
      ASSERT_TRUE(decode_secondary(v, &sv));
      RecordHint h = sv.hint;
      ASSERT_TRUE(primary->tree().lookup_hinted(sv.primary_key, &h, &row, &stats)) << secondary->name();
      EXPECT_EQ(h, sv.hint) << secondary->name() << ": the entry's hint is not where the record is";
    }
    EXPECT_EQ(stats.hits, entries.size()) << secondary->name() << ": stale " << stats.stale << ", slot moved "
                                          << stats.slot_moved << ", fallbacks " << stats.fallbacks;
  }
  EXPECT_TRUE(check_consistency(db).empty());
}

TEST(TpccInMemory, ConsistentAfterConcurrentRun) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 8192));
  RunResult r = load_run_check(*pool, 3, 3);
  EXPECT_EQ(r.evictions, 0u);
}

// New-Order with an unused item "rolls back" before writing anything (clause 2.4.2.3).
TEST(TpccTransactions, NewOrderWithAnInvalidItemWritesNothing) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 4096));
  auto db = CalicoDatabase<BufferPool>::create(*pool, Scale::make(1, kTinyScale));
  load(db, 1, 3, nullptr);
  TpccWorkload<Table<BufferPool>> wl(db, 9);
  NewOrderInput in{1, 2, 5, {{7, 1, 3}, {8, 1, 4}, {db.scale.items + 1, 1, 1}}};
  StockRow before;
  RecordHint h;
  ASSERT_TRUE(db.stock.read(key_stock(1, 7), &h, &before));
  const uint64_t orders = db.order.size(), lines = db.order_line.size();
  EXPECT_FALSE(wl.new_order(in));
  EXPECT_EQ(wl.counters().new_order_rollbacks, 1u);
  StockRow after;
  ASSERT_TRUE(db.stock.read(key_stock(1, 7), &h, &after));
  EXPECT_EQ(after.quantity, before.quantity);
  EXPECT_EQ(after.order_cnt, before.order_cnt);
  EXPECT_EQ(db.order.size(), orders);
  EXPECT_EQ(db.order_line.size(), lines);
  DistrictRow dr;
  ASSERT_TRUE(db.district.read(key_district(1, 2), &h, &dr));
  EXPECT_EQ(dr.next_o_id, db.scale.customers + 1);
  in.lines.pop_back();
  EXPECT_TRUE(wl.new_order(in));
  ASSERT_TRUE(db.stock.read(key_stock(1, 7), &h, &after));
  EXPECT_EQ(after.order_cnt, before.order_cnt + 1);
  EXPECT_TRUE(check_consistency(db).empty());
}

// Threads sharing one district (which the driver never does, but the protocols must allow):
// New-Orders take distinct o_ids from D_NEXT_O_ID, concurrent Deliveries claim each
// new-order row exactly once (a second delivery would add the order's amount to the
// customer's balance twice: condition 10), and Payments to the same customers lose no update.
TEST(TpccTransactions, ThreadsSharingADistrictLoseNoUpdateAndDeliverOnce) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 4096));
  auto db = CalicoDatabase<BufferPool>::create(*pool, Scale::make(2, kTinyScale));
  load(db, 1, 3, nullptr);
  const unsigned threads = 3;
  const int per_thread = 150;
  // Runs fn(t) on `threads` threads released together, so that their transactions overlap.
  auto parallel = [&](auto fn) {
    std::atomic<unsigned> ready{0};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();
        fn(t);
      });
    }
    for (auto& th : ts) th.join();
  };
  // Rounds of: New-Orders and Payments on district (1, 1) from every thread, then
  // Deliveries of warehouse 1 from every thread (more than the new-order rows: they race
  // for the last ones too).
  const int rounds = 3;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<uint64_t> failures{0}, delivered{0};
    parallel([&](unsigned t) {
      TpccWorkload<Table<BufferPool>> wl(db, 100 * round + t);
      for (int i = 0; i < per_thread; ++i) {
        NewOrderInput in = wl.random_new_order(1);
        in.d = 1;
        for (NewOrderLine& l : in.lines) l.i_id = std::min(l.i_id, db.scale.items);  // no rollback
        wl.new_order(in);
        PaymentInput p = wl.random_payment(2);
        p.c_w = 1, p.c_d = 1, p.by_name = false, p.c = 1 + i % 3;  // three hot customers
        wl.payment(p);
      }
      failures += wl.counters().failures;
    });
    ASSERT_EQ(failures.load(), 0u) << "round " << round;
    DistrictRow dr;
    RecordHint h;
    ASSERT_TRUE(db.district.read(key_district(1, 1), &h, &dr));
    EXPECT_EQ(dr.next_o_id, db.scale.customers + 1 + threads * per_thread * (round + 1));
    Violations v = check_consistency(db);
    ASSERT_TRUE(v.empty()) << "round " << round << " after the New-Orders:\n" << describe(v);
    const uint64_t undelivered = db.new_order.size();
    parallel([&](unsigned t) {
      TpccWorkload<Table<BufferPool>> wl(db, 100 * round + 50 + t);
      for (int i = 0; i < per_thread + 10; ++i) delivered += wl.delivery(1, 1 + t);
      failures += wl.counters().failures;
    });
    ASSERT_EQ(failures.load(), 0u) << "round " << round;
    v = check_consistency(db);
    ASSERT_TRUE(v.empty()) << "round " << round << " after the Deliveries:\n" << describe(v);
    EXPECT_EQ(undelivered - db.new_order.size(), delivered.load());
  }
}

// ---- The checker catches what it must ------------------------------------------------------

TEST(TpccConsistency, ReportsACorruptDistrictYtdAndAMissingNewOrderRow) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 4096));
  auto db = CalicoDatabase<BufferPool>::create(*pool, Scale::make(2, kTinyScale));
  load(db, 1, 3, nullptr);
  ASSERT_TRUE(check_consistency(db).empty());

  // D_YTD of (2, 3) one cent off: W_YTD = sum(D_YTD) (1) and D_YTD = sum(H_AMOUNT) (9) break.
  RecordHint h;
  ASSERT_TRUE(db.district.update<DistrictRow>(key_district(2, 3), &h, [](DistrictRow& r) { r.ytd_cents += 1; }));
  Violations v = check_consistency(db);
  EXPECT_TRUE(reported(v, "1", 2, 0)) << describe(v);
  EXPECT_TRUE(reported(v, "9", 2, 3)) << describe(v);
  EXPECT_FALSE(reported(v, "3", 1, 4)) << describe(v);
  ASSERT_TRUE(db.district.update<DistrictRow>(key_district(2, 3), &h, [](DistrictRow& r) { r.ytd_cents -= 1; }));
  ASSERT_TRUE(check_consistency(db).empty());

  // A new-order row in the middle of (1, 4) lost: a gap (3) and an undelivered order
  // without its new-order row (5).
  const uint32_t o = db.scale.first_new_order() + 2;
  ASSERT_TRUE(db.new_order.remove(key_new_order(1, 4, o)));
  v = check_consistency(db);
  EXPECT_TRUE(reported(v, "3", 1, 4)) << describe(v);
  EXPECT_TRUE(reported(v, "5", 1, 4)) << describe(v);
  EXPECT_FALSE(reported(v, "1", 2, 0)) << describe(v);

  // A new-order row for a delivered order: 5 again, in another district.
  ASSERT_TRUE(db.new_order.remove(key_new_order(2, 7, db.scale.customers)));  // keep max(NO_O_ID) honest
  ASSERT_TRUE(db.new_order.insert(key_new_order(2, 7, 1), ""));
  v = check_consistency(db);
  EXPECT_TRUE(reported(v, "5", 2, 7)) << describe(v);
  EXPECT_TRUE(reported(v, "2", 2, 7)) << describe(v);  // max(NO_O_ID) < D_NEXT_O_ID - 1 now
}

TEST(TpccConsistency, ReportsACustomerMissingFromItsIndex) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 4096));
  auto db = CalicoDatabase<BufferPool>::create(*pool, Scale::make(1, kTinyScale));
  load(db, 1, 3, nullptr);
  std::string key;
  db.customer_name.scan("", [&](std::string_view k, std::string_view) {
    key.assign(k);
    return false;
  });
  ASSERT_TRUE(db.customer_name.remove(key));
  const Violations v = check_consistency(db);
  EXPECT_TRUE(reported(v, "idx-customer", 1, 1)) << describe(v);
}

// ---- The subcommand --------------------------------------------------------------------------

bench::TpccConfig tiny_config(const TempDir& dir) {
  bench::TpccConfig c;
  c.translations = {"array"};
  c.warehouses = 2;
  c.threads = {1, 2};
  c.scale = kTinyScale;
  c.max_tx = 300;
  c.seconds = 300;
  c.data_dir = dir.sub("data");
  c.quiet = true;
  return c;
}

TEST(TpccCommand, RunsAndWritesAJsonLinePerRun) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  c.json_path = dir.sub("out.jsonl");
  c.pool_mb = 0.5;  // 128 frames: larger than memory
  c.index_skipping = {"off", "on"};
  EXPECT_EQ(bench::run_tpcc(c), 0);
  std::ifstream in(c.json_path);
  std::string line;
  int lines = 0, skipping_runs = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_NE(line.find(R"("experiment":"tpcc")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("violations":0,"failures":0)"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("tx":300,)"), std::string::npos) << line;
    // Skipping on: hint statistics per table; off: none.
    const bool on = line.find(R"("index_skipping":true)") != std::string::npos;
    EXPECT_EQ(line.find(R"("index_hints":{})") == std::string::npos, on) << line;
    skipping_runs += on;
  }
  EXPECT_EQ(lines, 4);
  EXPECT_EQ(skipping_runs, 2);
}

// The runs of one repeat share one loaded database, which grows with every run: the order of
// the (threads, mode) runs is rotated per repeat so that no mode always runs last. The JSON
// also carries the array's translation bytes without punching (entries of every block).
TEST(TpccCommand, RotatesTheRunOrderPerRepeatAndReportsUnpunchedTranslationBytes) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  c.json_path = dir.sub("out.jsonl");
  c.threads = {1};
  c.max_tx = 50;
  c.repeat = 2;
  c.index_skipping = {"off", "on"};
  ASSERT_EQ(bench::run_tpcc(c), 0);
  std::ifstream in(c.json_path);
  std::string line, order;
  const std::regex flat(R"re("translation_flat_bytes":(\d+),)re");
  while (std::getline(in, line)) {
    order += line.find(R"("repeat":0,)") != std::string::npos ? "0" : "1";
    order += line.find(R"("index_skipping":true)") != std::string::npos ? "on " : "off ";
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, flat)) << line;
    EXPECT_GT(std::stoull(m[1]), 0u) << line;
    EXPECT_EQ(std::stoull(m[1]) % 4096, 0u) << line;
  }
  EXPECT_EQ(order, "0off 0on 1on 1off ");
}

// A far-tier sweep runs the single-tier baselines beside the tiered designs: --far-mb goes to
// the tiered translations only, and every line records the option.
TEST(TpccCommand, GivesTheFarTierToTheTieredTranslationsOnly) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  c.json_path = dir.sub("out.jsonl");
  c.translations = {"array", "array_tiered"};
  c.threads = {1};
  c.max_tx = 50;
  c.pool_mb = 0.5;
  c.far_mb = 1;
  ASSERT_EQ(bench::run_tpcc(c), 0);
  std::ifstream in(c.json_path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_NE(line.find(R"("far_mb_option":1,)"), std::string::npos) << line;
    const bool tiered = line.find(R"("translation":"array_tiered")") != std::string::npos;
    EXPECT_EQ(line.find(R"("far_frames":256,)") != std::string::npos, tiered) << line;
  }
  EXPECT_EQ(lines, 2);
}

TEST(TpccCommand, RejectsBadInputWithAClearError) {
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
  c.warehouses = 0;
  expect_invalid(c, "--warehouses must be at least 1");
  c = tiny_config(dir);
  c.threads = {0};
  expect_invalid(c, "--threads must be at least 1");
  c = tiny_config(dir);
  c.threads = {3};
  expect_invalid(c, "--threads 3 exceeds --warehouses 2");
  c = tiny_config(dir);
  c.pool_mb = 0.1;  // 25 frames
  expect_invalid(c, "too small to load the item table");
  expect_invalid(c, "25 frames");
  c = tiny_config(dir);
  c.scale = 0;
  expect_invalid(c, "--scale");
  c = tiny_config(dir);
  c.translations = {"array", "vmcache"};
  c.far_mb = 1;
  expect_invalid(c, "--far-mb 1: none of the translations takes a far tier");
  // Nothing was created for the rejected runs.
  EXPECT_FALSE(std::filesystem::exists(dir.sub("data")));
}

TEST(TpccCommand, RefusesADataDirectoryThatIsNotOurs) {
  TempDir dir;
  bench::TpccConfig c = tiny_config(dir);
  std::filesystem::create_directories(c.data_dir + "/array");
  std::ofstream(c.data_dir + "/array/precious.txt") << "not the bench's";
  EXPECT_THROW(bench::run_tpcc(c), bench::BenchDirError);
  EXPECT_TRUE(std::filesystem::exists(c.data_dir + "/array/precious.txt"));
}

}  // namespace
}  // namespace calico
