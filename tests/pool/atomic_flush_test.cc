// Atomic flush (src/pool/journal.h): a crash reopens exactly the state of the last committed
// flush. A "crash" here is a copy of the data directory's files as they are while the pool
// is open (what a killed process leaves: the kernel keeps every completed write), opened by
// another pool; the kill-based tests are tests/pool/crash_test.cc and
// tests/index/vector_crash_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "calico/buffer_pool.h"
#include "pool/catalog.h"
#include "pool/journal.h"
#include "support/page_pattern.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::TempDir;

constexpr uint32_t kFrames = 16;
constexpr uint64_t kPages = 64;  // four times the pool: most writes are evicted in place

// The files of `dir` copied to `copy`, as a crash would leave them.
void crash_copy(const std::string& dir, const std::string& copy) {
  std::filesystem::remove_all(copy);
  std::filesystem::create_directory(copy);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "LOCK") {
      std::filesystem::copy_file(e.path(), copy + "/" + e.path().filename().string());
    }
  }
}

void rewrite_all(BufferPool& pool, SpaceId s, uint64_t stamp) {
  for (uint64_t b = 0; b < kPages; ++b) {
    ExclusiveGuard g = pool.pin_exclusive(PageId(s, static_cast<BlockId>(b)));
    test::stamp_pattern(g.data(), pool.usable_page_size(), g.page_id(), stamp);
    g.mark_dirty();
  }
}

// How many of the space's pages read back with `stamp` in the copy at `dir`.
uint64_t pages_with(const std::string& dir, uint64_t stamp) {
  auto pool = BufferPool::open(testing::small_options(dir, kFrames));
  const SpaceId s = pool->open_space("s");
  EXPECT_EQ(pool->space_blocks(s), kPages);
  uint64_t n = 0;
  for (uint64_t b = 0; b < kPages; ++b) {
    SharedGuard g = pool->pin_shared(PageId(s, static_cast<BlockId>(b)));
    EXPECT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), g.page_id())) << "block " << b;
    n += test::pattern_stamp(g.data()) == stamp;
  }
  return n;
}

// A pool on `dir` whose space "s" was filled with 1 and flushed, then rewritten with 2 (most
// of it evicted in place); `committed` gets the stats right after the flush.
std::unique_ptr<BufferPool> flushed_then_rewritten(const std::string& dir, PoolStats* committed = nullptr) {
  auto pool = BufferPool::open(testing::small_options(dir, kFrames));
  const SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, kPages, [](uint64_t) { return 1; });
  pool->flush();
  if (committed != nullptr) *committed = pool->stats();
  rewrite_all(*pool, s, 2);
  return pool;
}

TEST(AtomicFlush, EvictedWritesAfterAFlushAreUndoneByACrash) {
  TempDir dir;
  PoolStats committed;
  auto pool = flushed_then_rewritten(dir.path(), &committed);
  const PoolStats after = pool->stats();
  ASSERT_GE(after.write_backs - committed.write_backs, kPages - kFrames) << "the rewrite must be evicted in place";
  EXPECT_GE(after.journal_pages - committed.journal_pages, kPages - kFrames);
  EXPECT_GT(after.journal_syncs, committed.journal_syncs);
  // Crash before the next flush: flush 1's state exactly, though most pages hold 2 on disk.
  crash_copy(dir.path(), dir.sub("crash1"));
  EXPECT_EQ(pages_with(dir.sub("crash1"), 1), kPages);
  // The next flush commits the rewrite: a crash after it reopens 2 everywhere.
  pool->flush();
  EXPECT_EQ(pool->stats().flush_generation, committed.flush_generation + 1);
  EXPECT_EQ(std::filesystem::file_size(dir.sub(pool::kJournalFile)), 0u) << "a commit empties the journal";
  crash_copy(dir.path(), dir.sub("crash2"));
  EXPECT_EQ(pages_with(dir.sub("crash2"), 2), kPages);
}

// The regression this guards: without the journal, the same crash reopens a mix of the
// flushed values and the evicted rewrites (rule 6's weaker promise).
TEST(AtomicFlush, WithoutItTheSameCrashReopensAMix) {
  TempDir dir;
  PoolOptions o = testing::small_options(dir.path(), kFrames);
  o.atomic_flush = false;
  auto pool = BufferPool::open(o);
  const SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, kPages, [](uint64_t) { return 1; });
  pool->flush();
  rewrite_all(*pool, s, 2);
  EXPECT_EQ(pool->stats().journal_pages, 0u);
  crash_copy(dir.path(), dir.sub("crash"));
  const uint64_t ones = pages_with(dir.sub("crash"), 1);
  EXPECT_LT(ones, kPages) << "evicted rewrites reach the files in place";
  EXPECT_GT(ones, 0u) << "the pages still in memory do not";
}

// Pages allocated since the last flush need no image (recovery forgets their blocks), and a
// page rewritten twice in one epoch is saved once.
TEST(AtomicFlush, OnlyTheFirstRewriteOfADurablePageIsJournaled) {
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), kFrames));
  const SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, kPages, [](uint64_t) { return 1; });  // evicted: none durable yet
  EXPECT_EQ(pool->stats().journal_pages, 0u);
  pool->flush();
  rewrite_all(*pool, s, 2);
  rewrite_all(*pool, s, 3);
  EXPECT_LE(pool->stats().journal_pages, kPages);
  pool->flush();
  crash_copy(dir.path(), dir.sub("crash"));
  EXPECT_EQ(pages_with(dir.sub("crash"), 3), kPages);
}

// A crash between a flush's writes and its commit: the writes are undone too. Simulated by
// a copy taken while the next flush's pages are on disk but its catalog is not: a flush whose
// catalog write fails (the catalog path is a directory).
TEST(AtomicFlush, AFlushThatFailsToCommitIsUndoneByACrash) {
  TempDir dir;
  auto pool = flushed_then_rewritten(dir.path());
  std::filesystem::create_directory(dir.sub(pool::kCatalogTempFile));  // the catalog cannot be written
  EXPECT_THROW(pool->flush(), Error);
  crash_copy(dir.path(), dir.sub("crash"));
  EXPECT_EQ(pages_with(dir.sub("crash"), 1), kPages) << "every page was written in place, none committed";
  std::filesystem::remove(dir.sub(pool::kCatalogTempFile));
  pool->flush();  // the retry commits
  crash_copy(dir.path(), dir.sub("crash2"));
  EXPECT_EQ(pages_with(dir.sub("crash2"), 2), kPages);
}

// Records of a committed flush are stale: a journal whose truncation was lost changes
// nothing at the next open.
TEST(AtomicFlush, StaleRecordsAreIgnored) {
  TempDir dir;
  auto pool = flushed_then_rewritten(dir.path());
  crash_copy(dir.path(), dir.sub("journal_of_epoch_1"));  // a journal holding flush 1's images
  pool->flush();
  pool.reset();
  // The commit's truncation "lost": flush 1's records back beside flush 2's catalog.
  std::filesystem::copy_file(dir.sub("journal_of_epoch_1/journal"), dir.sub("journal"),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(pages_with(dir.path(), 2), kPages);
}

// An open that fails a check (here: a space larger than max_blocks_per_space) changes nothing
// on disk, the journal's records included: they are written back only by an open that
// succeeds. Before, recovery ran first and rewrote the space file of the refused open.
TEST(AtomicFlush, AFailedOpenRecoversNothing) {
  TempDir dir;
  auto pool = flushed_then_rewritten(dir.path());
  crash_copy(dir.path(), dir.sub("crash"));
  pool.reset();
  const std::string space_file = dir.sub("crash/space_1.dat");
  auto bytes_of = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = bytes_of(space_file), journal = bytes_of(dir.sub("crash/journal"));
  ASSERT_FALSE(journal.empty());
  PoolOptions o = testing::small_options(dir.sub("crash"), kFrames);
  o.max_blocks_per_space = kPages / 2;
  EXPECT_THROW(BufferPool::open(o), Error);
  EXPECT_EQ(bytes_of(space_file), before) << "the refused open wrote to the space file";
  EXPECT_EQ(bytes_of(dir.sub("crash/journal")), journal);
  EXPECT_EQ(pages_with(dir.sub("crash"), 1), kPages) << "the next open recovers";
}

}  // namespace
}  // namespace calico
