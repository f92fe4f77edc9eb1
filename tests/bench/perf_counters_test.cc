// PerfCounters (bench/common/perf_counters.h): the fallback when perf_event_open fails (forced with
// a failing open function, so it is tested on every machine), the real counters where the
// machine has them, and the report's "n/a" / null for a case without counters.
#include "common/perf_counters.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "micro/harness.h"
#include "support/test_util.h"

namespace calico {
namespace {

using bench::PerfCounters;
using bench::PerfSample;

long failing_open(perf_event_attr*, pid_t, int, int, unsigned long) {
  errno = EACCES;
  return -1;
}

TEST(PerfCounters, FallbackWhenPerfEventOpenFails) {
  PerfCounters pc(&failing_open);
  EXPECT_FALSE(pc.available());
  EXPECT_NE(pc.why().find("perf_event_open"), std::string::npos) << pc.why();
  pc.start();
  PerfSample s = pc.stop();
  EXPECT_FALSE(s.any());
  EXPECT_FALSE(s.ipc());
  EXPECT_FALSE(s.per_op(bench::kLlcMisses, 10));
  EXPECT_EQ(bench::format_counter(s.ipc()), "n/a");
  EXPECT_EQ(bench::json_counter(s.per_op(bench::kDtlbMisses, 10)), "null");
  PerfSample total;
  total.value.fill(1.0);
  total += s;  // a missing counter makes the sum missing, never a wrong number
  EXPECT_FALSE(total.any());
}

TEST(PerfCounters, RealCountersCountOrExplainWhyNot) {
  PerfCounters pc;
  if (!pc.available()) {
    EXPECT_FALSE(pc.why().empty());
    GTEST_SKIP() << "no hardware counters here: " << pc.why();
  }
  pc.start();
  volatile uint64_t x = 0;
  for (int i = 0; i < 1000000; ++i) x = x + i;
  PerfSample s = pc.stop();
  ASSERT_TRUE(s.value[bench::kInstructions]);
  EXPECT_GT(*s.value[bench::kInstructions], 1e6);
}

TEST(PerfCounters, ReportPrintsNaAndJsonNullWithoutCounters) {
  testing::TempDir dir;
  bench::micro::Common common;
  common.json_path = dir.sub("r.jsonl");
  common.repeat = 1;
  common.min_seconds = 0;
  bench::micro::Case c{"array", "w", [] { return bench::micro::RunOutcome{10, 0}; }, ""};
  bench::micro::Result r;
  r.c = &c;
  r.ns_per_op = {5.0};
  r.ops = 10;
  r.median_ns = 5.0;  // r.counters stays empty, as after a run without perf_event_open
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(bench::micro::report({"test", "op", R"("k":1)"}, {r}, common), 0u);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("n/a"), std::string::npos) << out;
  std::ifstream in(common.json_path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find(R"("counters_per_op":null)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("speedup":{"array":1,"direct":null})"), std::string::npos) << line;
}

}  // namespace
}  // namespace calico
