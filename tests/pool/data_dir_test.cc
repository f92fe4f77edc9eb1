// Opening a data directory (pool/data_dir.h): a failed open changes nothing on disk; a lost or
// damaged catalog is refused instead of starting empty over the data; a directory that is not
// Calico's is left alone; leftovers of an interrupted create or drop are cleaned up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "pool/catalog.h"
#include "support/dir_snapshot.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::snapshot_dir;
using testing::TempDir;

auto stamp_a = [](uint64_t b) { return 1000 + b; };
auto stamp_b = [](uint64_t b) { return 2000 + b; };

// Two spaces, "a" (30 pages) and "b" (10 pages), flushed and closed.
void make_two_spaces(const std::string& dir) {
  auto pool = BufferPool::open(testing::small_options(dir, 16));
  testing::fill_space(*pool, pool->create_space("a"), 30, stamp_a);
  testing::fill_space(*pool, pool->create_space("b"), 10, stamp_b);
  pool->flush();
}

void expect_two_spaces(const std::string& dir) {
  auto pool = BufferPool::open(testing::small_options(dir, 16));
  ASSERT_EQ(pool->spaces().size(), 2u);
  SpaceId a = pool->open_space("a"), b = pool->open_space("b");
  EXPECT_EQ(pool->space_blocks(a), 30u);
  EXPECT_EQ(pool->space_blocks(b), 10u);
  testing::expect_space(*pool, a, 30, stamp_a);
  testing::expect_space(*pool, b, 10, stamp_b);
  // A new space gets a fresh id: nothing of a or b is reused or unlinked.
  SpaceId c = pool->create_space("c");
  EXPECT_GT(c, std::max(a, b));
}

// Each failed open must leave every file byte-identical; before, the half-built pool's
// destructor flushed and rewrote the catalog empty or trimmed, and the next create_space
// reused id 1 and unlinked the old space_1.dat.
TEST(DataDir, FailedOpenChangesNothing) {
  struct Case {
    const char* name;
    void (*damage)(const std::string& dir);
    PoolOptions (*options)(const std::string& dir);
    ErrorCode code;
  };
  const Case cases[] = {
      {"wrong page size", [](const std::string&) {},
       [](const std::string& d) { return testing::small_options(d, 16, 8192); }, ErrorCode::kPageSizeMismatch},
      {"corrupt catalog record",
       [](const std::string& d) {
         std::string c = testing::read_file(d + "/catalog");
         c.replace(c.find("space 2 10 b"), 12, "space 2 1x b");
         testing::write_file(d + "/catalog", c);
       },
       [](const std::string& d) { return testing::small_options(d, 16); }, ErrorCode::kCorruptCatalog},
      {"missing space file", [](const std::string& d) { ::rename((d + "/space_2.dat").c_str(), (d + "/moved").c_str()); },
       [](const std::string& d) { return testing::small_options(d, 16); }, ErrorCode::kCorruptCatalog},
      {"bad options", [](const std::string&) {},
       [](const std::string& d) {
         PoolOptions o = testing::small_options(d, 16);
         o.max_blocks_per_space = 20;  // space a has 30
         return o;
       },
       ErrorCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    make_two_spaces(dir.path());
    c.damage(dir.path());
    auto before = snapshot_dir(dir.path());
    expect_error(c.code, [&] { BufferPool::open(c.options(dir.path())); });
    EXPECT_TRUE(snapshot_dir(dir.path()) == before) << "the failed open changed the directory";
  }
}

TEST(DataDir, OpenWhileInUseChangesNeitherPool) {
  TempDir dir;
  make_two_spaces(dir.path());
  {
    auto live = BufferPool::open(testing::small_options(dir.path(), 16));
    auto before = snapshot_dir(dir.path());
    Error e = expect_error(ErrorCode::kIoError, [&] { BufferPool::open(testing::small_options(dir.path(), 16)); });
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
    EXPECT_TRUE(snapshot_dir(dir.path()) == before) << "the failed open rewrote the live pool's catalog";
    EXPECT_EQ(live->spaces().size(), 2u);
  }
  expect_two_spaces(dir.path());
}

TEST(DataDir, LostCatalogIsRefusedNotStartedEmpty) {
  TempDir dir;
  make_two_spaces(dir.path());
  ASSERT_EQ(::unlink(dir.sub("catalog").c_str()), 0);
  auto before = snapshot_dir(dir.path());
  Error e = expect_error(ErrorCode::kCorruptCatalog, [&] { BufferPool::open(testing::small_options(dir.path(), 16)); });
  EXPECT_NE(std::string(e.what()).find("no catalog"), std::string::npos) << e.what();
  EXPECT_TRUE(snapshot_dir(dir.path()) == before);
}

TEST(DataDir, SpaceFileTheCatalogDoesNotNameIsRefused) {
  TempDir dir;
  make_two_spaces(dir.path());
  // An older catalog (or one from elsewhere) that lost space b: b's id is not below its
  // next_space_id, so b cannot be a leftover of a drop.
  std::string c = testing::read_file(dir.sub("catalog"));
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
  }
  pool::CatalogData d = pool::parse_catalog(c, "c");
  d.spaces.pop_back();
  d.next_space_id = 2;
  testing::write_file(dir.sub("catalog"), pool::format_catalog(d));
  auto before = snapshot_dir(dir.path());
  expect_error(ErrorCode::kCorruptCatalog, [&] { BufferPool::open(testing::small_options(dir.path(), 16)); });
  EXPECT_TRUE(snapshot_dir(dir.path()) == before);
}

TEST(DataDir, ForeignDirectoryIsLeftAlone) {
  TempDir dir;
  testing::write_file(dir.sub("notes.txt"), "mine");
  std::filesystem::create_directory(dir.sub("photos"));
  auto before = snapshot_dir(dir.path());
  Error e = expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(testing::small_options(dir.path(), 16)); });
  EXPECT_NE(std::string(e.what()).find("not a Calico data directory"), std::string::npos) << e.what();
  EXPECT_TRUE(snapshot_dir(dir.path()) == before);
  EXPECT_FALSE(std::filesystem::exists(dir.sub("LOCK")));
  // A file where the directory should be.
  expect_error(ErrorCode::kInvalidArgument, [&] { BufferPool::open(testing::small_options(dir.sub("notes.txt"), 16)); });
  EXPECT_EQ(testing::read_file(dir.sub("notes.txt")), "mine");
}

TEST(DataDir, LeftoversOfInterruptedCreateAndDropAreRemoved) {
  TempDir dir;
  make_two_spaces(dir.path());
  // A drop that wrote its catalog but crashed before the unlink: the catalog no longer names
  // space 2, whose id is below next_space_id. A create that crashed after making its empty
  // file, before its catalog: space_3.dat, empty.
  pool::CatalogData d = pool::parse_catalog(testing::read_file(dir.sub("catalog")), "c");
  d.spaces.pop_back();
  testing::write_file(dir.sub("catalog"), pool::format_catalog(d));
  testing::write_file(dir.sub("space_3.dat"), "");
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
    ASSERT_EQ(pool->spaces().size(), 1u);
    testing::expect_space(*pool, pool->open_space("a"), 30, stamp_a);
    EXPECT_FALSE(std::filesystem::exists(dir.sub("space_2.dat")));
    EXPECT_FALSE(std::filesystem::exists(dir.sub("space_3.dat")));
    EXPECT_EQ(pool->create_space("b"), 3u);
  }
  // A first open that crashed after taking the lock, before its catalog: a new pool.
  TempDir fresh;
  testing::write_file(fresh.sub("LOCK"), "");
  testing::write_file(fresh.sub("catalog.tmp"), "calico-cat");
  auto pool = BufferPool::open(testing::small_options(fresh.path(), 16));
  EXPECT_TRUE(pool->spaces().empty());
}

}  // namespace
}  // namespace calico
