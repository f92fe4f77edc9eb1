// Smoke runs of the translation microbenchmarks (bench/micro/micro.h) at tiny sizes on `array` and
// `direct`: each must pass its own checks (sums, found keys, identical BFS results across
// variants and runs) and write the JSON lines the report script reads. Correctness only,
// never timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "micro/micro.h"
#include "micro/scan.h"
#include "vector/vector.h"
#include "support/test_util.h"

namespace calico {
namespace {

std::vector<std::string> lines_with(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

// The number after "key": in a JSON line (first occurrence); -1 when absent.
double number(const std::string& line, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("\"" + key + "\":(-?[0-9.eE+]+)"))) return -1;
  return std::stod(m[1]);
}

// Every timed line: no failed self-check, 2 runs, `ops` operations over them, a time.
void expect_timed(const std::vector<std::string>& lines, double ops_per_run) {
  for (const auto& l : lines) {
    EXPECT_EQ(number(l, "failures"), 0) << l;
    EXPECT_EQ(number(l, "runs"), 2) << l;
    EXPECT_EQ(number(l, "ops"), 2 * ops_per_run) << l;
    EXPECT_GT(number(l, "median_ns_per_op"), 0) << l;
  }
}

bench::micro::Common tiny_common(const testing::TempDir& dir) {
  bench::micro::Common c;
  c.translations = {"array", "direct"};
  c.repeat = 2;
  c.min_seconds = 0;  // one pass per run
  c.data_dir = dir.sub("data");
  c.json_path = dir.sub("micro.jsonl");
  c.quiet = true;
  return c;
}

// A timed run repeats a short case until it lasted min_seconds, and reports the time per
// operation over all of its passes.
TEST(MicroSmoke, TimedRunsLastAtLeastMinSeconds) {
  bench::micro::Common common;
  common.repeat = 2;
  common.min_seconds = 0.05;
  common.counters = false;
  common.quiet = true;
  int passes = 0;
  std::vector<bench::micro::Case> cases{{"array", "spin", [&] {
                                            ++passes;
                                            volatile uint64_t x = 0;
                                            for (int i = 0; i < 1000; ++i) x = x + i;
                                            return bench::micro::RunOutcome{1000, 0};
                                          },
                                          ""}};
  std::vector<bench::micro::Result> r = bench::micro::measure(cases, common);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].run_seconds.size(), 2u);
  for (double s : r[0].run_seconds) EXPECT_GE(s, 0.05);
  EXPECT_GT(passes, 3);  // the warm-up is one pass; each timed run took several
  EXPECT_EQ(r[0].ops, uint64_t(passes - 1) * 1000);
  for (double ns : r[0].ns_per_op) EXPECT_GT(ns, 0);
}

TEST(MicroSmoke, ScanSumsMatchTheLoadedRows) {
  testing::TempDir dir;
  bench::ScanConfig cfg;
  cfg.common = tiny_common(dir);
  cfg.data_mb = 2;
  cfg.prefetch_distance = 4;
  ASSERT_EQ(bench::run_scan(cfg), 0);
  auto lines = lines_with(cfg.common.json_path, R"("experiment":"scan")");
  ASSERT_EQ(lines.size(), 8u) << "2 translations x {sequential, random} x {optimistic, pinned}";
  expect_timed(lines, number(lines[0], "pages"));  // every run visits every page
  EXPECT_NE(lines[0].find(R"("speedup":{"array":)"), std::string::npos);
}

// A pool too small to hold the data: array evicts (not a resident measurement) and direct
// runs out of frames; both are reported as skipped, and the run fails without throwing.
TEST(MicroSmoke, VariantsThatCannotLoadAreSkippedAndFailTheRun) {
  testing::TempDir dir;
  bench::ScanConfig cfg;
  cfg.common = tiny_common(dir);
  cfg.data_mb = 2;
  cfg.pool_mb = 1;
  EXPECT_EQ(bench::run_scan(cfg), 1);
  auto lines = lines_with(cfg.common.json_path, R"("experiment":"skipped")");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(R"("for":"scan")"), std::string::npos) << lines[0];
  EXPECT_TRUE(lines_with(cfg.common.json_path, R"("experiment":"scan")").empty());
}

TEST(MicroSmoke, BTreeLookupsFindEveryKey) {
  testing::TempDir dir;
  bench::MicroBTreeConfig cfg;
  cfg.common = tiny_common(dir);
  cfg.records = 20000;
  cfg.lookups = 5000;
  ASSERT_EQ(bench::run_micro_btree(cfg), 0);
  auto lines = lines_with(cfg.common.json_path, R"("experiment":"btree")");
  ASSERT_EQ(lines.size(), 2u);
  expect_timed(lines, 5000);
  for (const auto& l : lines) EXPECT_GT(number(l, "tree_pages"), 20000 * 128 / 4096) << l;
}

bench::MicroBfsConfig tiny_graph(const testing::TempDir& dir) {
  bench::MicroBfsConfig cfg;
  cfg.common = tiny_common(dir);
  cfg.nodes = 600;
  cfg.visits = 200;
  cfg.queries = 3;
  return cfg;
}

TEST(MicroSmoke, BfsVisitsTheExpectedCountWithAndWithoutPrefetch) {
  testing::TempDir dir;
  bench::MicroBfsConfig cfg = tiny_graph(dir);
  ASSERT_EQ(bench::run_micro_bfs(cfg), 0);
  auto lines = lines_with(cfg.common.json_path, R"("experiment":"bfs")");
  ASSERT_EQ(lines.size(), 4u) << "2 translations x prefetch off/on";
  expect_timed(lines, 3 * 200);  // 44 random neighbours: connected, every query visits 200
}

TEST(MicroSmoke, BfsRunsOnlyTheAskedPrefetchMode) {
  for (const std::string mode : {"off", "on"}) {
    testing::TempDir dir;
    bench::MicroBfsConfig cfg = tiny_graph(dir);
    cfg.prefetch = mode;
    ASSERT_EQ(bench::run_micro_bfs(cfg), 0);
    auto lines = lines_with(cfg.common.json_path, R"("experiment":"bfs")");
    ASSERT_EQ(lines.size(), 2u) << "2 translations, prefetch " << mode;
    for (const auto& l : lines) {
      EXPECT_NE(l.find(mode == "on" ? R"("workload":"bfs + group prefetch")" : R"("workload":"bfs")"),
                std::string::npos)
          << l;
    }
    expect_timed(lines, 3 * 200);
  }
}

TEST(MicroSmoke, AblationStepsAgreeOnTheSearch) {
  testing::TempDir dir;
  bench::MicroBfsConfig cfg = tiny_graph(dir);
  ASSERT_EQ(bench::run_micro_ablation(cfg), 0);
  auto lines = lines_with(cfg.common.json_path, R"("experiment":"ablation")");
  ASSERT_GE(lines.size(), 4u);
  expect_timed(lines, 3 * 200);
  EXPECT_NE(lines.back().find(R"("translation":"+ group prefetch")"), std::string::npos);
  EXPECT_NE(lines.back().find(R"("speedup":{"first":)"), std::string::npos);
}

TEST(MicroSmoke, MemoryIsSampledForEvictingTranslations) {
  testing::TempDir dir;
  bench::MicroMemoryConfig cfg;
  cfg.common = tiny_common(dir);
  cfg.data_mb = {2, 4};
  cfg.pool_mb = 1;
  cfg.sweep_lookups = 3000;
  cfg.moving_data_mb = 2;
  cfg.moving_ops = 6000;
  cfg.samples = 6;
  ASSERT_EQ(bench::run_micro_memory(cfg), 0);
  auto sizes = lines_with(cfg.common.json_path, R"("experiment":"memory_size")");
  ASSERT_EQ(sizes.size(), 1u) << "direct is skipped";
  EXPECT_NE(sizes[0].find(R"("translation":"array")"), std::string::npos);
  EXPECT_NE(sizes[0].find(R"("data_mb":4,)"), std::string::npos);
  EXPECT_GT(number(sizes[0], "translation_private_bytes"), 0);
  auto moving = lines_with(cfg.common.json_path, R"("experiment":"memory_moving")");
  ASSERT_EQ(moving.size(), 1u);
  EXPECT_EQ(number(moving[0], "failures"), 0);
  EXPECT_NE(moving[0].find(R"("phase":"latest")"), std::string::npos);
  EXPECT_NE(moving[0].find(R"("op":6000,)"), std::string::npos);
}

TEST(MicroSmoke, UnknownTranslationIsAnError) {
  testing::expect_error(ErrorCode::kInvalidArgument,
                        [] { bench::micro::select_translations({"array", "no_such"}, true, "test"); });
  EXPECT_EQ(bench::micro::select_translations({"direct", "array", "array"}, false, "test"),
            std::vector<std::string>{"array"});
}

// The vector bench's figures are taken over whole timed runs. Pass 0 is the warm-up; each
// run takes passes until their seconds reach min_seconds, as the harness does. A run's
// figure is sum(amount) / sum(seconds) over its passes, and the median is over the runs.
// Before this, the figures came from the last `repeat` passes alone, so an in-memory
// thread that ran flat out could show 0.35 cores.
TEST(VectorRuns, FiguresAreTakenOverWholeTimedRuns) {
  const std::vector<double> seconds{0.5, 0.1, 0.1, 0.1, 0.2, 0.15, 0.4};
  const auto runs = bench::timed_runs(seconds, 3, 0.3);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0], std::make_pair(size_t{1}, size_t{4}));  // 0.1 + 0.1 + 0.1 reaches 0.3
  EXPECT_EQ(runs[1], std::make_pair(size_t{4}, size_t{6}));  // 0.2 + 0.15
  EXPECT_EQ(runs[2], std::make_pair(size_t{6}, size_t{7}));  // 0.4 alone
  // CPU seconds per pass: the last pass of run 0 shows none (a coarse clock), the run 0.2 / 0.3.
  const std::vector<double> cpu{0.5, 0.1, 0.1, 0.0, 0.2, 0.15, 0.2};
  EXPECT_NEAR(bench::run_median(cpu, seconds, {runs[0]}), 2.0 / 3.0, 1e-12);
  // Per run: 0.2 / 0.3, 0.35 / 0.35 and 0.2 / 0.4; the median is 0.2 / 0.3.
  EXPECT_NEAR(bench::run_median(cpu, seconds, runs), 2.0 / 3.0, 1e-12);
  // Runs beyond the passes recorded are not invented; min_seconds 0 makes one pass a run.
  EXPECT_EQ(bench::timed_runs(seconds, 9, 0.3).size(), 3u);
  EXPECT_EQ(bench::timed_runs(seconds, 9, 0).size(), 6u);
  EXPECT_EQ(bench::timed_runs({0.5}, 2, 0.3).size(), 0u);
  EXPECT_EQ(bench::run_median(cpu, seconds, {}), 0.0);
}

// The vector bench end to end on a tiny clustered set: both indexes build (each at its own
// page size, kept in its own directory), every timed run returns the same neighbours as the
// first, recall is high at the largest parameter, and each JSON line names its page size.
TEST(VectorSmoke, BothIndexesAtTheirPageSizes) {
  testing::TempDir dir;
  bench::VectorConfig c;
  c.n = 3000;
  c.dim = 16;
  c.clusters = 30;
  c.queries = 40;
  c.indexes = {"hnsw", "ivf"};
  c.ef = {64};
  c.nprobe = {1, 64};
  c.threads = {2};
  c.build_threads = 2;
  c.repeat = 2;
  c.min_seconds = 0;
  c.hnsw_page_size = 4096;
  c.ivf_page_size = 16384;
  c.cache_dir = dir.path() + "/data";
  c.data_dir = dir.path() + "/pools";
  c.json_path = dir.path() + "/vector.jsonl";
  ASSERT_EQ(bench::run_vector(c), 0);
  const auto hnsw = lines_with(c.json_path, "\"index\":\"hnsw\"");
  const auto ivf = lines_with(c.json_path, "\"index\":\"ivf\"");
  ASSERT_EQ(hnsw.size(), 1u);
  ASSERT_EQ(ivf.size(), 2u);
  for (const auto& l : hnsw) EXPECT_EQ(number(l, "page_size"), 4096) << l;
  for (const auto& l : ivf) EXPECT_EQ(number(l, "page_size"), 16384) << l;
  for (const auto* lines : {&hnsw, &ivf}) {
    for (const auto& l : *lines) EXPECT_EQ(number(l, "result_mismatches"), 0) << l;
  }
  EXPECT_GE(number(hnsw[0], "recall"), 0.9) << hnsw[0];
  EXPECT_GE(number(ivf[1], "recall"), 0.999) << "nprobe 64 covers every list: " << ivf[1];
  int built = 0;
  for (const auto& e : std::filesystem::directory_iterator(c.data_dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("hnsw-")) {
      EXPECT_EQ(name.find("-p"), std::string::npos) << name;
    }
    if (name.starts_with("ivf-")) {
      EXPECT_TRUE(name.ends_with("-p16384")) << name;
    }
    built += name != "run";
  }
  EXPECT_EQ(built, 2);
}

}  // namespace
}  // namespace calico
