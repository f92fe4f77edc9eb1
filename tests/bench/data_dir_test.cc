// The drivers delete only what they created (bench/common/data_dir.h), and reject sizes that would
// overflow when turned into bytes (bench/common/sizes.h). Driven through the demo driver (a library
// call, as drivers_smoke_test.cc), the one every first user runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/data_dir.h"
#include "demo/demo.h"
#include "support/test_util.h"
#include "ycsb/ycsb.h"

namespace calico {
namespace {

namespace fs = std::filesystem;

bench::DemoConfig tiny_demo(const std::string& dir) {
  bench::DemoConfig cfg;
  cfg.data_dir = dir;
  cfg.data_mb = 2;
  cfg.pool_mb = 1;
  cfg.seconds = 0.1;
  cfg.threads = 1;
  return cfg;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A user's directory that happens to hold a file named "catalog" (or a Calico pool of
// another program) is not the bench's: the demo refuses it and leaves every byte in place.
TEST(BenchDataDir, UserDirectoryWithACatalogSurvivesUntouched) {
  testing::TempDir tmp;
  const fs::path dir = tmp.sub("mine");
  write_file(dir / "catalog", "my catalog of records\n");
  write_file(dir / "thesis.tex", "\\chapter{One}\n");
  write_file(dir / "photos" / "cat.jpg", "JPEG");
  EXPECT_THROW(bench::run_demo(tiny_demo(dir.string())), bench::BenchDirError);
  EXPECT_EQ(read_file(dir / "catalog"), "my catalog of records\n");
  EXPECT_EQ(read_file(dir / "thesis.tex"), "\\chapter{One}\n");
  EXPECT_EQ(read_file(dir / "photos" / "cat.jpg"), "JPEG");
  EXPECT_FALSE(fs::exists(dir / bench::kBenchDirMarker));
}

// A file where the directory should be is refused, and stays.
TEST(BenchDataDir, PathThatIsAFileIsRefused) {
  testing::TempDir tmp;
  const fs::path file = tmp.sub("data");
  write_file(file, "not a directory\n");
  EXPECT_THROW(bench::run_demo(tiny_demo(file.string())), bench::BenchDirError);
  EXPECT_EQ(read_file(file), "not a directory\n");
}

// A directory the bench made, into which somebody put a file of their own, is refused as a
// whole: the bench deletes nothing it did not create.
TEST(BenchDataDir, MarkedDirectoryHoldingAForeignFileIsRefused) {
  testing::TempDir tmp;
  const fs::path dir = tmp.sub("run");
  bench::DemoConfig cfg = tiny_demo(dir.string());
  cfg.keep_data = true;
  ASSERT_EQ(bench::run_demo(cfg), 0);
  ASSERT_TRUE(fs::exists(dir / "catalog"));
  write_file(dir / "notes.txt", "results so far\n");
  EXPECT_THROW(bench::run_demo(cfg), bench::BenchDirError);
  EXPECT_EQ(read_file(dir / "notes.txt"), "results so far\n");
  EXPECT_TRUE(fs::exists(dir / "catalog"));
}

// A directory the bench made is reused: after a complete run (keep_data), and after a run
// interrupted before its pool wrote a catalog (marker, LOCK and a space file only).
TEST(BenchDataDir, MarkedDirectoryIsReused) {
  testing::TempDir tmp;
  const fs::path dir = tmp.sub("run");
  bench::DemoConfig cfg = tiny_demo(dir.string());
  cfg.keep_data = true;
  ASSERT_EQ(bench::run_demo(cfg), 0);
  EXPECT_TRUE(bench::is_bench_dir(dir));
  EXPECT_EQ(bench::run_demo(cfg), 0);

  fs::remove(dir / "catalog");  // as if the run had been killed before its first flush
  ASSERT_FALSE(fs::is_empty(dir));
  EXPECT_EQ(bench::run_demo(cfg), 0);
  cfg.keep_data = false;
  EXPECT_EQ(bench::run_demo(cfg), 0);
  EXPECT_FALSE(fs::exists(dir)) << "a run without keep_data removes its own directory";
  EXPECT_TRUE(fs::exists(tmp.path())) << "and nothing above it";
}

// Sizes that would wrap around when shifted into bytes are rejected, naming the option
// (a "-1" on the command line reaches an unsigned option as 2^64 - 1).
TEST(BenchSizes, SizesThatOverflowAreRejected) {
  testing::TempDir tmp;
  bench::DemoConfig cfg = tiny_demo(tmp.sub("demo"));
  cfg.pool_mb = 99999999999999;
  try {
    bench::run_demo(cfg);
    ADD_FAILURE() << "--pool-mb 99999999999999 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--pool-mb"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.sub("demo"))) << "rejected before touching the disk";

  bench::YcsbConfig y;
  y.data_dir = tmp.sub("ycsb");
  y.cache_mb = static_cast<uint64_t>(-1);
  try {
    bench::run_ycsb(y);
    ADD_FAILURE() << "--cache-mb -1 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--cache-mb"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace calico
