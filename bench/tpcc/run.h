// run_workload<TableT>: one timed TPC-C run on a loaded Database with N worker threads.
//
// Entry points: RunSpec, RunResult, run_workload(db, spec).
//
// Worker t is the home terminal of the warehouses w with w mod threads == t (so threads
// must not exceed warehouses: every worker needs a home); each transaction picks one of its
// warehouses uniformly, then a type by the mix (workload.h). Every transaction's latency is
// recorded per type. A monitor thread prints one line per second (tx/s, MB/s read and
// written by the pool: synchronous faults and prefetch reads, write-backs, in pages; from
// db.backend->stats(), which a peer fills with zeros: peers/peer_store.h). The
// run ends after `seconds` or after max_tx transactions (tests), or at the first error of
// any worker, which is rethrown after every worker stopped.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "workload.h"

namespace calico::bench::tpcc {

struct RunSpec {
  unsigned threads = 1;
  double seconds = 1;
  uint64_t max_tx = 0;  // > 0: stop after this many transactions over all workers
  uint64_t seed = 42;
  bool print_each_second = false;
  bool remember_hints = false;  // each worker keeps its records' hints across transactions
  std::string label;    // prefix of the per-second lines
};

struct TxLatency {
  uint64_t count = 0;
  double p50_us = 0, p99_us = 0;
};

struct RunResult {
  uint64_t tx = 0;
  double seconds = 0, tx_per_s = 0;
  double cpu_seconds = 0;  // user + system of the whole process during the run
  double tx_per_cpu_s = 0;
  std::array<TxLatency, kTxTypes> latency;
  TxCounters counters;  // summed over workers
  TableHintStats hints;  // index skipping per table (Table::id), summed over workers
  uint64_t pages_read = 0, pages_written = 0, evictions = 0;
  PoolStats begin;      // the backend's stats before the run (a peer's: zeros)
  PoolStats end;        // the backend's stats after the run (a peer's: zeros)
};

inline double cpu_now_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

inline double percentile_us(std::vector<uint32_t>& v, double q) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return v[i] / 1000.0;
}

// Errors: std::invalid_argument when threads is 0 or exceeds the warehouses; the workers'
// errors (calico::Error, RowSizeError).
template <class TableT>
RunResult run_workload(Database<TableT>& db, const RunSpec& spec) {
  using Clock = std::chrono::steady_clock;
  const uint32_t warehouses = db.scale.warehouses;
  if (spec.threads == 0) throw std::invalid_argument("--threads must be at least 1");
  if (spec.threads > warehouses) {
    throw std::invalid_argument("--threads " + std::to_string(spec.threads) + " exceeds --warehouses " +
                                std::to_string(warehouses) +
                                ": every thread is the home terminal of its own warehouses (w mod threads)");
  }
  struct alignas(64) Worker {
    std::atomic<uint64_t> tx{0};
    std::array<std::vector<uint32_t>, kTxTypes> lat_ns;
    TxCounters counters;
    TableHintStats hints;
  };
  std::vector<Worker> workers(spec.threads);
  std::atomic<bool> go{false}, stop{false};
  std::atomic<unsigned> finished{0};
  std::atomic<uint64_t> budget{spec.max_tx};
  std::mutex error_mutex;
  std::exception_ptr error;

  auto work = [&](unsigned t) {
    try {
      Worker& me = workers[t];
      TpccWorkload<TableT> wl(db, spec.seed * 0x9E3779B97F4A7C15ull + t * 7919 + 1, spec.remember_hints);
      Random pick(spec.seed + 31 * (t + 1));
      std::vector<uint32_t> home;
      for (uint32_t w = 1; w <= warehouses; ++w) {
        if (w % spec.threads == t) home.push_back(w);
      }
      for (auto& v : me.lat_ns) v.reserve(1 << 14);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (spec.max_tx != 0) {
          uint64_t b = budget.load(std::memory_order_relaxed);
          do {
            if (b == 0) break;
          } while (!budget.compare_exchange_weak(b, b - 1, std::memory_order_relaxed));
          if (b == 0) break;
        }
        const uint32_t w = home[home.size() == 1 ? 0 : pick.uniform(0, static_cast<uint32_t>(home.size()) - 1)];
        const auto t0 = Clock::now();
        const TxType type = wl.run_one(w);
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
        me.lat_ns[size_t(type)].push_back(static_cast<uint32_t>(std::min<int64_t>(ns, UINT32_MAX)));
        me.tx.store(++n, std::memory_order_relaxed);
      }
      me.counters = wl.counters();
      me.hints = tls_hint_stats;  // a fresh thread: this run's only
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      stop.store(true);
    }
    finished.fetch_add(1);
  };

  const PoolStats before = db.backend->stats();
  const double cpu0 = cpu_now_s();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < spec.threads; ++t) threads.emplace_back(work, t);
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.seconds));
  uint64_t last_tx = 0;
  PoolStats last = before;
  auto last_time = start;
  const double page_mb = static_cast<double>(db.backend->page_size()) / (1 << 20);
  for (int second = 1; finished.load() < spec.threads; ++second) {
    const auto wake = start + std::chrono::seconds(second);
    while (Clock::now() < wake && finished.load() < spec.threads && (spec.max_tx != 0 || Clock::now() < deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (spec.max_tx == 0 && Clock::now() >= deadline) stop.store(true);
    if (stop.load() || finished.load() == spec.threads) break;
    uint64_t now_tx = 0;
    for (const Worker& w : workers) now_tx += w.tx.load(std::memory_order_relaxed);
    const PoolStats now_stats = db.backend->stats();
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_time).count();
    if (spec.print_each_second) {
      const uint64_t rd = (now_stats.faults + now_stats.prefetch_issued) - (last.faults + last.prefetch_issued);
      const uint64_t wr = now_stats.write_backs - last.write_backs;
      fmt::print("  {} {:>3}s {:>10.0f} tx/s {:>9.1f} MB/s read {:>9.1f} MB/s written\n", spec.label, second,
                 static_cast<double>(now_tx - last_tx) / dt, static_cast<double>(rd) * page_mb / dt,
                 static_cast<double>(wr) * page_mb / dt);
      std::fflush(stdout);
    }
    last_tx = now_tx;
    last = now_stats;
    last_time = now;
  }
  for (auto& th : threads) th.join();
  const auto end = Clock::now();
  const double cpu1 = cpu_now_s();
  if (error) std::rethrow_exception(error);

  RunResult r;
  r.seconds = std::chrono::duration<double>(end - start).count();
  r.cpu_seconds = cpu1 - cpu0;
  for (size_t type = 0; type < kTxTypes; ++type) {
    std::vector<uint32_t> all;
    for (Worker& w : workers) all.insert(all.end(), w.lat_ns[type].begin(), w.lat_ns[type].end());
    r.latency[type] = {all.size(), percentile_us(all, 0.50), percentile_us(all, 0.99)};
    r.tx += all.size();
  }
  for (const Worker& w : workers) {
    for (size_t i = 0; i < kMaxTables; ++i) r.hints[i] += w.hints[i];
    const TxCounters& c = w.counters;
    for (size_t type = 0; type < kTxTypes; ++type) r.counters.done[type] += c.done[type];
    r.counters.new_order_rollbacks += c.new_order_rollbacks;
    r.counters.remote_order_lines += c.remote_order_lines;
    r.counters.remote_payments += c.remote_payments;
    r.counters.by_name += c.by_name;
    r.counters.delivery_claims_lost += c.delivery_claims_lost;
    r.counters.delivery_skipped += c.delivery_skipped;
    if (c.failures != 0 && r.counters.failures == 0) r.counters.first_failure = c.first_failure;
    r.counters.failures += c.failures;
  }
  r.tx_per_s = r.seconds > 0 ? static_cast<double>(r.tx) / r.seconds : 0;
  r.tx_per_cpu_s = r.cpu_seconds > 0 ? static_cast<double>(r.tx) / r.cpu_seconds : 0;
  r.begin = before;
  r.end = db.backend->stats();
  r.pages_read = (r.end.faults + r.end.prefetch_issued) - (before.faults + before.prefetch_issued);
  r.pages_written = r.end.write_backs - before.write_backs;
  r.evictions = r.end.evictions - before.evictions;
  return r;
}

}  // namespace calico::bench::tpcc
