// Tests of the larger-than-memory benchmarks' timed regions (bench/vector/timed_region.h): which
// queries a region runs, and that no timed search repeats a query run fewer than the query
// count earlier.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "vector/timed_region.h"

namespace calico::bench {
namespace {

// Counts what the searches "read": every search faults 2 pages and prefetches 3.
struct FakePool {
  struct Stats {
    uint64_t faults = 0, prefetch_issued = 0;
  };
  std::atomic<uint64_t> faults{0}, prefetches{0};
  Stats stats() const { return {faults.load(), prefetches.load()}; }
};

// The queries one region ran, as a sorted list (threads interleave, so order is not observable).
std::vector<uint64_t> run_region(FakePool& pool, uint32_t threads, QueryCursor* cursor, RegionResult* result) {
  std::mutex mu;
  std::vector<uint64_t> ran;
  *result = timed_region(pool, threads, 0.02, cursor, [&](uint64_t q, uint32_t) {
    pool.faults += 2;
    pool.prefetches += 3;
    std::lock_guard<std::mutex> lock(mu);
    ran.push_back(q);
  });
  std::sort(ran.begin(), ran.end());
  return ran;
}

// The sorted queries i % n for i in [from, to).
std::vector<uint64_t> span_of(uint64_t from, uint64_t to, uint64_t n) {
  std::vector<uint64_t> v;
  for (uint64_t i = from; i < to; ++i) v.push_back(i % n);
  std::sort(v.begin(), v.end());
  return v;
}

TEST(TimedRegion, EachRegionGoesOnWhereTheLastStopped) {
  for (const uint64_t n : {uint64_t{1} << 40, uint64_t{7}}) {  // without and with wrapping around
    FakePool pool;
    QueryCursor cursor(n);
    uint64_t at = 0;
    for (int region = 0; region < 3; ++region) {
      RegionResult r;
      const std::vector<uint64_t> ran = run_region(pool, 2, &cursor, &r);
      ASSERT_GT(r.queries, 0u);
      EXPECT_EQ(ran.size(), r.queries);
      EXPECT_EQ(ran, span_of(at, at + r.queries, n)) << "region " << region << " of n = " << n;
      at += r.queries;
      EXPECT_DOUBLE_EQ(r.reads_per_query, 5.0);
      EXPECT_DOUBLE_EQ(r.faults_per_query, 2.0);
      EXPECT_GT(r.qps, 0.0);
      EXPECT_LE(r.p50_ms, r.p99_ms);
    }
  }
}

TEST(TimedRegion, AfterAPassTheNextQueryIsThePassesFirst) {
  QueryCursor cursor(10);
  cursor.after_pass();  // at 0: stays
  EXPECT_EQ(cursor.next(), 0u);
  for (int i = 0; i < 12; ++i) cursor.next();
  EXPECT_EQ(cursor.next(), 3u);
  cursor.after_pass();
  EXPECT_EQ(cursor.next(), 0u);
  EXPECT_EQ(cursor.next(), 1u);
}

// A reference model of a run: recall passes (queries 0 .. n-1 in order, then after_pass) and
// timed regions of random lengths, in random order. Every timed search of a query must come
// at least n searches after that query's last run.
TEST(TimedRegion, NoTimedSearchRepeatsAQueryWithinTheQueryCount) {
  std::mt19937_64 rng(7);
  for (const uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{1000}}) {
    QueryCursor cursor(n);
    std::map<uint64_t, uint64_t> last_run;  // query -> position of its last search
    uint64_t position = 0;
    for (int step = 0; step < 200; ++step) {
      if (rng() % 3 == 0) {
        for (uint64_t q = 0; q < n; ++q) last_run[q] = position++;
        cursor.after_pass();
      } else {
        const uint64_t k = 1 + rng() % (3 * n);
        for (uint64_t i = 0; i < k; ++i, ++position) {
          const uint64_t q = cursor.next();
          ASSERT_LT(q, n);
          if (auto it = last_run.find(q); it != last_run.end()) {
            ASSERT_GE(position - it->second, n) << "query " << q << " at step " << step << " of n = " << n;
          }
          last_run[q] = position;
        }
      }
    }
  }
}

}  // namespace
}  // namespace calico::bench
