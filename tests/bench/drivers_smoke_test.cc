// Smoke runs of the demo and vector-coded drivers: tiny sizes; each must check its own
// answers (the page patterns; exact distances of every coded result) and write its JSON
// lines. The scan and the other microbenchmarks: micro_smoke_test.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "demo/demo.h"
#include "vector/coded.h"
#include "support/test_util.h"

namespace calico {
namespace {

size_t count_lines(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

TEST(Drivers, DemoVerifiesEveryPageItReads) {
  testing::TempDir dir;
  bench::DemoConfig cfg;
  cfg.data_dir = dir.sub("demo");
  cfg.data_mb = 8;
  cfg.pool_mb = 2;  // 4x smaller than the data: evictions and write-backs
  cfg.seconds = 0.5;
  cfg.prefetch_group = 4;
  cfg.json_path = dir.sub("demo.jsonl");
  EXPECT_EQ(bench::run_demo(cfg), 0);
  EXPECT_EQ(count_lines(cfg.json_path, R"("experiment":"demo")"), 1u);
  EXPECT_EQ(count_lines(cfg.json_path, R"("bad_pages":0)"), 1u);
}

// Two budgets, two thread counts and --reuse: one build searched at both budgets, then the
// kept build searched again without building.
TEST(Drivers, VectorCodedChecksEveryDistanceAndReusesItsBuild) {
  testing::TempDir dir;
  bench::VectorCodedConfig cfg;
  cfg.n = 3000;
  cfg.dim = 16;
  cfg.clusters = 20;
  cfg.queries = 50;
  cfg.cache_dir = dir.sub("data");
  cfg.dir = dir.sub("coded");
  cfg.reuse = true;
  cfg.pool_fractions = {4, 0.1};
  cfg.threads = {1, 2};
  cfg.hnsw_ef = {32};
  cfg.coded_ef = {64};
  cfg.rerank = {50};
  cfg.seconds = 0.05;
  cfg.json_path = dir.sub("coded.jsonl");
  EXPECT_EQ(bench::run_vector_coded(cfg), 0);
  // 2 budgets x 2 indexes x 2 thread counts, every check passed.
  EXPECT_EQ(count_lines(cfg.json_path, R"("bench":"vector-coded")"), 8u);
  EXPECT_EQ(count_lines(cfg.json_path, R"("check":true)"), 8u);
  EXPECT_EQ(count_lines(cfg.json_path, R"("reused_build":false)"), 8u);
  EXPECT_EQ(bench::run_vector_coded(cfg), 0);
  EXPECT_EQ(count_lines(cfg.json_path, R"("reused_build":true)"), 8u);
}

}  // namespace
}  // namespace calico
