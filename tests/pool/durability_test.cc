// Rule 6 (pool/README.md): after a crash a reopened pool holds what the last flush wrote;
// blocks allocated after it are forgotten, and a block that should hold data but is all zero
// is an error, never an empty page. A "crash image" here is a copy of the data directory
// taken while the pool is still open (its O_DIRECT writes are in the files; nothing else is).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::TempDir;

auto stamp_of = [](uint64_t b) { return 77 + b; };

std::string crash_image(const TempDir& live, const TempDir& where) {
  std::string image = where.sub("image");
  std::filesystem::copy(live.path(), image);
  return image;
}

// create_space and drop_space write the catalog; they used to record block counts nobody had
// flushed, so after a crash never-written blocks came back as zero pages without error.
TEST(Durability, CatalogWritesBetweenFlushesKeepTheFlushedCounts) {
  for (bool by_drop : {false, true}) {
    SCOPED_TRACE(by_drop ? "drop_space" : "create_space");
    TempDir dir, out;
    auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
    SpaceId a = pool->create_space("a");
    SpaceId gone = pool->create_space("gone");
    testing::fill_space(*pool, a, 10, stamp_of);
    pool->flush();
    testing::fill_space(*pool, a, 40, [](uint64_t b) { return 5000 + b; });  // blocks 10..49, unflushed
    if (by_drop) pool->drop_space(gone); else pool->create_space("b");
    std::string image = crash_image(dir, out);
    auto reopened = BufferPool::open(testing::small_options(image, 16));
    SpaceId ra = reopened->open_space("a");
    EXPECT_EQ(reopened->space_blocks(ra), 10u);
    testing::expect_space(*reopened, ra, 10, stamp_of);
    expect_error(ErrorCode::kPageOutOfRange, [&] { reopened->pin_shared(PageId(ra, 10)); });
    expect_error(ErrorCode::kPageOutOfRange, [&] { reopened->pin_shared(PageId(ra, 49)); });
  }
}

TEST(Durability, FlushMakesTheCountDurable) {
  TempDir dir, out;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
  SpaceId a = pool->create_space("a");
  testing::fill_space(*pool, a, 50, stamp_of);
  pool->flush();
  testing::fill_space(*pool, a, 5, [](uint64_t b) { return 9000 + b; });  // unflushed: forgotten
  std::string image = crash_image(dir, out);
  auto reopened = BufferPool::open(testing::small_options(image, 16));
  EXPECT_EQ(reopened->space_blocks(reopened->open_space("a")), 50u);
  testing::expect_space(*reopened, reopened->open_space("a"), 50, stamp_of);
}

// A lost write (a block below the durable count that reads as all zero) used to read as an
// empty page: an HNSW index then silently lost recall. Now it is kChecksumMismatch, by every
// way in, and the other pages are unaffected.
TEST(Durability, AllZeroBlockIsALostWriteNotAnEmptyPage) {
  TempDir dir;
  SpaceId s;
  {
    auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
    s = pool->create_space("a");
    testing::fill_space(*pool, s, 20, stamp_of);
  }
  std::string zeros(4096, '\0');
  {
    std::FILE* f = std::fopen(dir.sub("space_" + std::to_string(s) + ".dat").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4096 * 7, SEEK_SET);
    std::fwrite(zeros.data(), 1, zeros.size(), f);
    std::fclose(f);
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
  PageId lost(s, 7);
  Error e = expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_shared(lost); });
  EXPECT_EQ(e.page(), lost);
  EXPECT_NE(std::string(e.what()).find("never written"), std::string::npos) << e.what();
  expect_error(ErrorCode::kChecksumMismatch, [&] { pool->optimistic_read(lost, [](const std::byte*) { return 0; }); });
  std::vector<PageId> group{lost, PageId(s, 8)};
  pool->prefetch_group(group);
  expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_exclusive(lost); });
  EXPECT_GE(pool->stats().prefetch_failed, 1u);
  for (uint64_t b = 0; b < 20; ++b) {
    if (b == 7) continue;
    SharedGuard g = pool->pin_shared(PageId(s, static_cast<BlockId>(b)));
    EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(b));
  }
  pool->check_invariants();
}

// An allocation that fails (no frame) claims nothing: no block is counted that was never
// written. It used to keep the block, which then read back as a zero page.
TEST(Durability, FailedAllocationClaimsNoBlock) {
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 2));
  SpaceId s = pool->create_space("a");
  testing::fill_space(*pool, s, 4, stamp_of);
  {
    SharedGuard g0 = pool->pin_shared(PageId(s, 0));
    SharedGuard g1 = pool->pin_shared(PageId(s, 1));
    expect_error(ErrorCode::kPoolFull, [&] { pool->allocate(s); });
    EXPECT_EQ(pool->space_blocks(s), 4u);
  }
  ExclusiveGuard g = pool->allocate(s);
  EXPECT_EQ(g.page_id().block(), 4u);
  test::stamp_pattern(g.data(), pool->usable_page_size(), g.page_id(), stamp_of(4));
  g.mark_dirty();
  g.release();
  pool->flush();
  pool.reset();
  auto reopened = BufferPool::open(testing::small_options(dir.path(), 2));
  EXPECT_EQ(reopened->space_blocks(s), 5u);
  testing::expect_space(*reopened, s, 5, stamp_of);
}

}  // namespace
}  // namespace calico
