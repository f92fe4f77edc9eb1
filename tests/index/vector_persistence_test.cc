// Vector indexes across processes: an HNSW or IVF index that one process builds and flushes
// is opened by another, searched (recall against brute force), extended, flushed, and read
// back by a third. The other processes are tests/support/vector_tool.cc; both sides
// generate the same rows from the seed (testing::clustered; its first n rows do not depend
// on the total count).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "calico/index/hnsw.h"
#include "calico/index/ivf.h"
#include "support/subprocess.h"
#include "support/test_util.h"
#include "support/vector_data.h"

namespace calico {
namespace {

using testing::Data;
using testing::TempDir;

int run_tool(const std::vector<std::string>& args) { return testing::run_process(testing::helper_tool("vector_tool"), args); }

constexpr uint64_t kBuilt = 800;  // rows the first process indexes
constexpr uint64_t kTotal = 1000;  // rows after this process adds the rest
constexpr uint64_t kSeed = 11;
constexpr uint32_t kK = 10;

// This process's part: open what vector_tool built, check it, search, add the rest, flush.
template <class Index, class SearchOptions, class State>
void open_search_extend(const std::string& dir, const Data& d, SearchOptions opt) {
  auto pool = BufferPool::open(testing::small_options(dir, 40));
  auto index = Index::open(*pool, "vectors");
  ASSERT_EQ(index.size(), kBuilt);
  ASSERT_EQ(index.dim(), d.dim);
  Data built = d;
  built.n = kBuilt;
  built.rows.resize(kBuilt * d.dim);
  State st(index);
  std::vector<std::vector<vector::Neighbor>> got(d.num_queries());
  for (uint64_t q = 0; q < d.num_queries(); ++q) index.search(d.query(q), opt, st, &got[q]);
  EXPECT_GE(testing::mean_recall(got, testing::reference(built, vector::Metric::kL2, kK)), 0.9);
  for (uint64_t i = kBuilt; i < kTotal; ++i) index.add(static_cast<uint32_t>(i), d.row(i));
  pool->flush();
}

class VectorPersistence : public ::testing::TestWithParam<std::string> {};

TEST_P(VectorPersistence, BuildFlushReopenInANewProcessSearch) {
  const std::string kind = GetParam();
  TempDir dir;
  const Data d = testing::clustered(kTotal, 16, 20, 40, kSeed);
  ASSERT_EQ(run_tool({"build", kind, dir.path(), std::to_string(kBuilt), std::to_string(kSeed)}), 0);
  // The tool's checker fails on a wrong row count and an unreachable recall.
  EXPECT_EQ(run_tool({"check", kind, dir.path(), std::to_string(kBuilt), std::to_string(kSeed), "0.9"}), 0);
  EXPECT_EQ(run_tool({"check", kind, dir.path(), std::to_string(kBuilt - 1), std::to_string(kSeed), "0.9"}), 1);
  EXPECT_EQ(run_tool({"check", kind, dir.path(), std::to_string(kBuilt), std::to_string(kSeed), "1.01"}), 1);
  if (kind == "hnsw") {
    open_search_extend<index::BasicHnsw<BufferPool>, index::HnswSearchOptions, index::HnswSearchState>(
        dir.path(), d, index::HnswSearchOptions{kK, 64, true, true});
  } else {
    open_search_extend<index::BasicIvf<BufferPool>, index::IvfSearchOptions, index::IvfSearchState>(
        dir.path(), d, index::IvfSearchOptions{kK, 4, true, true});
  }
  EXPECT_EQ(run_tool({"check", kind, dir.path(), std::to_string(kTotal), std::to_string(kSeed), "0.9"}), 0);
}

INSTANTIATE_TEST_SUITE_P(Indexes, VectorPersistence, ::testing::Values("hnsw", "ivf"));

TEST(VectorPersistence, ToolRejectsAMissingIndex) {
  TempDir dir;
  EXPECT_EQ(run_tool({"check", "hnsw", dir.path(), "10", "1", "0.5"}), 2);
  EXPECT_EQ(run_tool({"check", "ivf", dir.path(), "10", "1", "0.5"}), 2);
  EXPECT_EQ(run_tool({"bogus"}), 2);
}

}  // namespace
}  // namespace calico
