// Smoke run of the demo driver: tiny sizes; it must check its own answer (the page patterns)
// and write its JSON line. The scan and the other microbenchmarks: micro_smoke_test.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "demo/demo.h"
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

}  // namespace
}  // namespace calico
