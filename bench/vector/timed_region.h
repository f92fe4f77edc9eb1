// Timed search regions over a query set for larger-than-memory benchmarks, and the cursor that
// orders their queries.
//
// A pool keeps the pages its searches read. A query searched again while its pages are still
// resident is credited with hits that a stream of new queries never gets (and a peer whose
// cache is fixed at load, as DiskANN's node cache, gets none). So every query of a run comes
// from one QueryCursor: a query runs again only after every other query has run once since,
// whether in a timed region or in a recall pass. Give more queries than the pool holds the
// pages of, and no search finds its own earlier pages.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace calico::bench {

// The run's next query, shared by its timed regions and recall passes. Invariant: between two
// runs of the same query, every other query has run once (the gap is the query count).
class QueryCursor {
 public:
  explicit QueryCursor(uint64_t queries) : queries_(queries) {}

  uint64_t queries() const { return queries_; }

  // The next query index (0 .. queries - 1), thread-safe.
  uint64_t next() { return next_.fetch_add(1, std::memory_order_relaxed) % queries_; }

  // Call after a pass that ran queries 0 .. queries - 1 in order (a recall pass): the next
  // query is 0, the one that pass ran first. (Going on from where the timed regions stopped
  // would run a query the pass ran only moments ago.)
  void after_pass() {
    const uint64_t at = next_.load(std::memory_order_relaxed);
    next_.store((at + queries_ - 1) / queries_ * queries_, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> next_{0};
  const uint64_t queries_;
};

// One timed region's measurements.
struct RegionResult {
  uint64_t queries = 0;           // searches completed
  double qps = 0;
  double reads_per_query = 0;     // pages read (faults + prefetches) per query
  double faults_per_query = 0;    // synchronous reads per query
  double p50_ms = 0, p99_ms = 0;  // per-query latency percentiles
};

// `threads` threads search for `seconds`, each taking its queries from *cursor and timing each
// search: search(query_index, thread) must be thread-safe across threads. Pool: anything with
// stats() returning faults and prefetch_issued counters (PoolStats).
template <class Pool, class Search>
RegionResult timed_region(const Pool& pool, uint32_t threads, double seconds, QueryCursor* cursor, Search&& search) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const auto before = pool.stats();
  std::vector<std::vector<double>> lat(threads);
  std::atomic<bool> stop{false};
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t q = cursor->next();
        const auto q0 = Clock::now();
        search(q, t);
        lat[t].push_back(since(q0) * 1e3);
        if (t == 0 && since(t0) >= seconds) stop.store(true);
      }
    });
  }
  for (auto& t : ts) t.join();
  const double s = since(t0);
  const auto after = pool.stats();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  RegionResult r;
  r.queries = all.size();
  const double done = double(all.size());
  r.qps = done / s;
  r.reads_per_query = double((after.faults - before.faults) + (after.prefetch_issued - before.prefetch_issued)) / done;
  r.faults_per_query = double(after.faults - before.faults) / done;
  r.p50_ms = all[static_cast<size_t>(0.50 * double(all.size() - 1))];
  r.p99_ms = all[static_cast<size_t>(0.99 * double(all.size() - 1))];
  return r;
}

}  // namespace calico::bench
