// Persistence across processes: what one process flushes, a fresh process reads back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::TempDir;

// Runs page_tool (a separate executable) and returns its exit code.
int run_tool(const std::vector<std::string>& args) { return testing::run_process(testing::helper_tool("page_tool"), args); }

class Persistence : public ::testing::TestWithParam<size_t> {};

TEST_P(Persistence, FlushedPagesSurviveAcrossProcesses) {
  TempDir dir;
  std::string ps = std::to_string(GetParam());
  const uint64_t pages = 300;
  {
    // This process writes; a tiny pool makes most pages go to disk through eviction first.
    auto pool = BufferPool::open(testing::small_options(dir.path(), 8, GetParam()));
    SpaceId s = pool->create_space("data");
    testing::fill_space(*pool, s, pages, [](uint64_t b) { return 100 + b; });
    pool->flush();
  }
  EXPECT_EQ(run_tool({"verify", dir.path(), ps, "data", std::to_string(pages), "100"}), 0);
  EXPECT_EQ(run_tool({"verify", dir.path(), ps, "data", std::to_string(pages), "101"}), 1)
      << "the checker must notice wrong stamps";
  // Another process rewrites everything and adds pages; this process reads it back.
  EXPECT_EQ(run_tool({"write", dir.path(), ps, "data", std::to_string(pages + 50), "7000"}), 0);
  auto pool = BufferPool::open(testing::small_options(dir.path(), 8, GetParam()));
  SpaceId s = pool->open_space("data");
  EXPECT_EQ(pool->space_blocks(s), pages + 50);
  testing::expect_space(*pool, s, pages + 50, [](uint64_t b) { return 7000 + b; });
}

INSTANTIATE_TEST_SUITE_P(PageSizes, Persistence, ::testing::Values(4096, 16384));

TEST(Persistence, UnflushedPoolCloseStillFlushes) {
  TempDir dir;
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 64));
    testing::fill_space(*pool, pool->create_space("data"), 20, [](uint64_t b) { return 500 + b; });
  }  // no flush(): the destructor flushes
  EXPECT_EQ(run_tool({"verify", dir.path(), "4096", "data", "20", "500"}), 0);
}

}  // namespace
}  // namespace calico
