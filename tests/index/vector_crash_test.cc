// Vector crash test: a child process (vector_tool churn) upserts, deletes and consolidates a
// mapped HNSW index with labels on a small pool (constant eviction), flushing after every
// round, and is killed with SIGKILL at a random moment. The parent reopens the directory and
// checks that the index is exactly the model of one flush: the last completed round, or the
// one whose flush was in progress if that flush committed. Multi-page structures (the graph,
// the id B+tree, the label tree, the slot array) come back whole because a crash restores the
// last committed flush (src/pool/journal.h); the check:
//  - the pool opens, and the index and its map open and pass check_structure();
//  - the index holds exactly the model's ids, each with its label;
//  - each id's vector is the one its last upsert wrote: a search filtered to that id alone
//    returns it at distance 0 (the filter's exact path: no approximation involved);
//  - the recovered index takes a new round, and the next reopen sees it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "calico/buffer_pool.h"
#include "calico/index/hnsw.h"
#include "calico/index/mapped_index.h"
#include "support/subprocess.h"
#include "support/test_util.h"
#include "support/vector_churn.h"

namespace calico {
namespace {

using testing::ChurnModel;
using testing::TempDir;
using Mapped = index::MappedHnsw<BufferPool>;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kKills = 12;  // the child is instrumented too: each run is several times slower
#else
constexpr int kKills = 40;
#endif
constexpr uint64_t kRounds = 30;
constexpr uint64_t kSeed = 5;

struct ChurnLog {
  bool ready = false;  // the empty index was flushed
  long done = -1;      // the last round whose flush returned
  long begun = -1;     // a round whose flush began after it (killed inside it), or -1
  bool ended = false;
};

ChurnLog read_log(const std::string& path) {
  ChurnLog log;
  std::ifstream in(path);
  std::string kind;
  while (in >> kind) {
    if (kind == "I") {
      log.ready = true;
      continue;
    }
    if (kind == "E") {
      log.ended = true;
      continue;
    }
    long r;
    if (!(in >> r)) break;
    if (kind == "B") log.begun = r;
    if (kind == "D") {
      log.done = r;
      log.begun = -1;
    }
  }
  return log;
}

PoolOptions options(const std::string& dir) {
  PoolOptions o = testing::small_options(dir, 40);
  o.max_blocks_per_space = 1 << 20;
  return o;
}

// The first way `m` differs from `model`, or "".
std::string differs(const Mapped& m, const ChurnModel& model) {
  if (m.size() != model.size()) {
    return "holds " + std::to_string(m.size()) + " ids, the model " + std::to_string(model.size());
  }
  Mapped::State st(m);
  std::vector<index::MappedNeighbor> out;
  for (const auto& [id, row] : model) {
    if (!m.contains(id)) return "id " + std::to_string(id) + " is missing";
    const std::optional<uint32_t> label = m.label(id);
    if (!label || *label != row.label) {
      return "id " + std::to_string(id) + " has label " + (label ? std::to_string(*label) : "none") + ", not " +
             std::to_string(row.label);
    }
    const std::vector<float> v = testing::churn_vector(id, row.version);
    const uint64_t only[] = {id};
    m.search(v.data(), {1, 16}, st, &out, m.filter(only));
    if (out.size() != 1 || out[0].id != id || out[0].distance != 0.0f) {
      return "id " + std::to_string(id) + " does not hold the vector of round " + std::to_string(row.version);
    }
  }
  return "";
}

Mapped open_mapped(BufferPool& pool) {
  return Mapped::attach(pool, "churn", index::BasicHnsw<BufferPool>::open(pool, "churn"));
}

// Checks the reopened directory; returns whether it held the round in progress.
bool check_recovered(const std::string& dir, const ChurnLog& log) {
  auto pool = BufferPool::open(options(dir));  // must not fail
  Mapped m = open_mapped(*pool);
  m.check_structure();
  const uint64_t done_rounds = static_cast<uint64_t>(log.done + 1);
  const std::string done_diff = differs(m, testing::churn_model(kSeed, done_rounds));
  if (done_diff.empty()) return false;
  const std::string begun_diff =
      log.begun >= 0 ? differs(m, testing::churn_model(kSeed, static_cast<uint64_t>(log.begun) + 1))
                     : "no flush was in progress";
  EXPECT_EQ(begun_diff, "") << "the index is the state of no flush: against round " << log.done << ": " << done_diff;
  return true;
}

ChurnLog run_child(const std::string& dir, long delay_us, bool* killed) {
  const std::string log_path = dir + ".log";
  std::remove(log_path.c_str());
  pid_t pid = testing::start_process(testing::helper_tool("vector_tool"),
                                     {"churn", dir, std::to_string(kSeed), std::to_string(kRounds), log_path});
  EXPECT_GT(pid, 0);
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  *killed = delay_us > 0 && ::kill(pid, SIGKILL) == 0;
  int status = 0;
  waitpid(pid, &status, 0);
  *killed = *killed && WIFSIGNALED(status);
  if (!*killed) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "vector_tool churn failed";
  ChurnLog log = read_log(log_path);
  std::remove(log_path.c_str());
  return log;
}

TEST(VectorCrash, KilledDuringChurnReopensAsTheLastFlush) {
  TempDir root;
  bool killed = false;
  const auto t0 = std::chrono::steady_clock::now();
  const ChurnLog full = run_child(root.sub("calibrate"), 0, &killed);
  long run_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(full.ended);
  ASSERT_EQ(full.done, static_cast<long>(kRounds) - 1);
  check_recovered(root.sub("calibrate"), full);

  std::mt19937_64 rng(20261129);
  int kills = 0, in_flush = 0, in_progress = 0, before_ready = 0;
  for (int i = 0; i < kKills && !::testing::Test::HasFailure(); ++i) {
    const std::string dir = root.sub("run" + std::to_string(i));
    const long delay = 1 + static_cast<long>(rng() % static_cast<uint64_t>(run_us * 9 / 10 + 1));
    const auto started = std::chrono::steady_clock::now();
    const ChurnLog log = run_child(dir, delay, &killed);
    if (!killed) {
      run_us = std::min<long>(run_us, std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::steady_clock::now() - started).count());
    }
    if (!log.ready) {
      ++before_ready;  // killed before the empty index was durable: nothing to check
    } else {
      SCOPED_TRACE("run " + std::to_string(i) + ", kill after " + std::to_string(delay) + " us");
      try {
        in_progress += check_recovered(dir, log);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "reopening after the kill: " << e.what() << " (last flushed round " << log.done
                      << ", round in flush " << log.begun << ")";
      }
      if (::testing::Test::HasFailure()) {
        const std::string keep = "/tmp/calico-vector-crash-failure-" + std::to_string(i);
        std::filesystem::remove_all(keep);
        std::filesystem::copy(dir, keep, std::filesystem::copy_options::recursive);
        std::fprintf(stderr, "vector crash test failed: directory kept at %s\n", keep.c_str());
      }
    }
    std::filesystem::remove_all(dir);
    kills += killed;
    in_flush += killed && log.begun >= 0;
  }
  std::printf("vector crash test: %d kills (%d inside a flush, %d reopened as the flush in progress, %d before the "
              "index was durable); an uninterrupted run takes %ld us\n",
              kills, in_flush, in_progress, before_ready, run_us);
  EXPECT_GE(kills, kKills / 2) << "runs must be killed mid-way";
}

// The recovered index is usable: a round more, flushed, is what the next process sees.
TEST(VectorCrash, RecoveredIndexTakesMoreRounds) {
  TempDir root;
  bool killed = false;
  const ChurnLog log = run_child(root.path(), 0, &killed);
  ASSERT_TRUE(log.ended);
  ChurnModel model = testing::churn_model(kSeed, kRounds);
  {
    auto pool = BufferPool::open(options(root.path()));
    Mapped m = open_mapped(*pool);
    const testing::ChurnRound c = testing::churn_round(kSeed, kRounds, model);
    std::vector<float> rows;
    for (const uint64_t id : c.upserts) {
      const std::vector<float> v = testing::churn_vector(id, kRounds);
      rows.insert(rows.end(), v.begin(), v.end());
    }
    m.add(c.upserts, rows.data(), 1, index::AddMode::kUpsert, c.labels);
    m.remove(c.deletes);
    for (size_t i = 0; i < c.upserts.size(); ++i) model[c.upserts[i]] = {kRounds, c.labels[i]};
    for (const uint64_t id : c.deletes) model.erase(id);
    m.sync();
    pool->flush();
  }
  auto pool = BufferPool::open(options(root.path()));
  Mapped m = open_mapped(*pool);
  m.check_structure();
  EXPECT_EQ(differs(m, model), "");
}

}  // namespace
}  // namespace calico
