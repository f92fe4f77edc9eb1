// Pool-level fault injection: the write paths (eviction, flush) lose nothing and leak
// nothing when the disk fails, and no fault makes the pool hand out wrong data silently.
//
// The deterministic tests reproduce one defect each (fsync failure, a thread without an
// io_uring, a page whose write-back keeps failing); RandomFaults.* drives a small pool with
// every class of fault injected at random points (io::FaultInjector) against an exact model:
// while the pool lives every page reads back its latest value; after a clean reopen its value
// as of the closing flush; after a crash (a copy of the files) a value it had at the last
// successful flush or later (src/pool/README.md rule 6; ModelPage below).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "io/fault_injector.h"
#include "pool/catalog.h"
#include "pool/journal.h"
#include "support/test_util.h"

namespace calico {
namespace {

using testing::expect_error;
using testing::TempDir;

std::string fd_path(int fd) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
}

std::string space_file(const TempDir& dir, SpaceId s) { return dir.sub("space_" + std::to_string(s) + ".dat"); }

void stamp(ExclusiveGuard& g, size_t usable, uint64_t value) {
  test::stamp_pattern(g.data(), usable, g.page_id(), value);
  g.mark_dirty();
}

// Counts writes and syncs per file; fails the syncs (or writes) of chosen files while armed.
// A failed write transfers nothing: the file keeps its old bytes.
class CountingDisk : public io::FaultInjector {
 public:
  uint32_t transfer_bytes(bool is_write, int fd, uint64_t, uint32_t len) override {
    if (!is_write) return len;
    std::lock_guard lock(mu_);
    return failing_writes_.count(fd_path(fd)) != 0 ? 0 : len;
  }
  int on_complete(bool is_write, int fd, uint64_t, uint32_t, int result) override {
    if (!is_write) return result;
    std::lock_guard lock(mu_);
    std::string path = fd_path(fd);
    ++writes_[path];
    if (failing_writes_.count(path) != 0) return -EIO;
    return result;
  }
  int on_sync(int fd, int result) override {
    std::lock_guard lock(mu_);
    std::string path = fd_path(fd);
    ++syncs_[path];
    if (failing_syncs_.count(path) != 0) return -EIO;
    return result;
  }
  void fail_sync(const std::string& path, bool fail) {
    std::lock_guard lock(mu_);
    if (fail) failing_syncs_.insert(path); else failing_syncs_.erase(path);
  }
  void fail_writes(const std::string& path, bool fail) {
    std::lock_guard lock(mu_);
    if (fail) failing_writes_.insert(path); else failing_writes_.erase(path);
  }
  int writes(const std::string& path) {
    std::lock_guard lock(mu_);
    return writes_[path];
  }
  int syncs(const std::string& path) {
    std::lock_guard lock(mu_);
    return syncs_[path];
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> writes_, syncs_;
  std::set<std::string> failing_syncs_, failing_writes_;
};

// Defect 4: flush marked pages clean as their writes completed and synced afterwards, so a
// failed fdatasync left them clean: never rewritten, though the kernel may have dropped them.
TEST(FaultInjection, FailedSyncLeavesWrittenPagesDirtyForTheRetry) {
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 32);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("data");
  const std::string path = space_file(dir, s);
  constexpr uint64_t kPages = 10;
  testing::fill_space(*pool, s, kPages, [](uint64_t b) { return 100 + b; });
  pool->flush();
  for (BlockId b = 0; b < kPages; ++b) {
    ExclusiveGuard g = pool->pin_exclusive(PageId(s, b));
    stamp(g, pool->usable_page_size(), 200 + b);
  }
  disk.fail_sync(path, true);
  const int before = disk.writes(path);
  Error e = expect_error(ErrorCode::kIoError, [&] { pool->flush(); });
  EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  EXPECT_EQ(disk.writes(path) - before, static_cast<int>(kPages));
  EXPECT_GE(pool->stats().sync_failures, 1u);
  pool->check_invariants();

  // Nothing is known durable: the retry writes every page again, and then they are clean.
  disk.fail_sync(path, false);
  pool->flush();
  EXPECT_EQ(disk.writes(path) - before, static_cast<int>(2 * kPages)) << "the retried flush must rewrite";
  pool->flush();
  EXPECT_EQ(disk.writes(path) - before, static_cast<int>(2 * kPages)) << "synced pages are clean";
  pool->check_invariants();
  pool.reset();
  pool = BufferPool::open(testing::small_options(dir.path(), 32));
  testing::expect_space(*pool, s, kPages, [](uint64_t b) { return 200 + b; });
}

// Defect 4: the first failing space skipped the syncs of the others and the catalog.
void every_space_synced_and_every_failure_reported(bool atomic_flush) {
  SCOPED_TRACE(atomic_flush ? "atomic flush" : "no atomic flush");
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 32);
  o.testing.fault_injector = &disk;
  o.atomic_flush = atomic_flush;
  auto pool = BufferPool::open(o);
  SpaceId a = pool->create_space("a");  // synced first
  SpaceId b = pool->create_space("b");
  SpaceId c = pool->create_space("c");
  for (SpaceId s : {a, b, c}) testing::fill_space(*pool, s, 3, [](uint64_t x) { return x + 1; });
  disk.fail_sync(space_file(dir, a), true);
  disk.fail_sync(space_file(dir, c), true);
  const int b_syncs = disk.syncs(space_file(dir, b));
  Error e = expect_error(ErrorCode::kIoError, [&] { pool->flush(); });
  const std::string what = e.what();
  EXPECT_EQ(disk.syncs(space_file(dir, b)), b_syncs + 1) << "b must be synced although a failed";
  EXPECT_NE(what.find(space_file(dir, a)), std::string::npos) << what;
  EXPECT_NE(what.find(space_file(dir, c)), std::string::npos) << "every failure is reported: " << what;
  EXPECT_LT(what.find(space_file(dir, a)), what.find(space_file(dir, c))) << "the first one first: " << what;
  // Without atomic flush the catalog was written with b's three blocks durable (rule 6); a
  // and c, whose syncs failed, keep their old durable count (0): their blocks are not known
  // durable. With it the failed flush commits nothing: all three keep 0.
  std::optional<pool::CatalogData> catalog = pool::read_catalog(dir.path());
  ASSERT_TRUE(catalog.has_value());
  for (const pool::CatalogSpace& rec : catalog->spaces) {
    EXPECT_EQ(rec.blocks, rec.name == "b" && !atomic_flush ? 3u : 0u) << rec.name;
  }
  disk.fail_sync(space_file(dir, a), false);
  disk.fail_sync(space_file(dir, c), false);
  pool->flush();
  pool->check_invariants();
  catalog = pool::read_catalog(dir.path());
  for (const pool::CatalogSpace& rec : catalog->spaces) EXPECT_EQ(rec.blocks, 3u) << rec.name;
}

TEST(FaultInjection, EverySpaceIsSyncedAndEveryFailureReported) {
  every_space_synced_and_every_failure_reported(/*atomic_flush=*/true);
  every_space_synced_and_every_failure_reported(/*atomic_flush=*/false);
}

// The rollback journal (pool/journal.h): a page the last flush made durable is overwritten
// in place only after its image is synced to the journal. When the journal's sync fails,
// nothing is overwritten: the victims stay dirty, and a caller that can get no frame sees
// kIoError naming the journal; once the disk recovers, the same writes go through.
TEST(FaultInjection, AFailedJournalSyncOverwritesNothingInPlace) {
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 16);
  o.testing.fault_injector = &disk;
  auto pool = BufferPool::open(o);
  const SpaceId s = pool->create_space("s");
  testing::fill_space(*pool, s, 64, [](uint64_t) { return 1; });
  pool->flush();
  const int writes_before = disk.writes(space_file(dir, s));
  disk.fail_sync(dir.sub(pool::kJournalFile), true);
  auto rewrite = [&](uint64_t value) {
    for (BlockId b = 0; b < 64; ++b) {
      ExclusiveGuard g = pool->pin_exclusive(PageId(s, b));
      stamp(g, pool->usable_page_size(), value);
    }
  };
  Error e = expect_error(ErrorCode::kIoError, [&] { rewrite(2); });
  EXPECT_NE(std::string(e.what()).find(pool::kJournalFile), std::string::npos) << e.what();
  EXPECT_EQ(disk.writes(space_file(dir, s)), writes_before) << "no page of the last flush was overwritten";
  EXPECT_GT(pool->stats().write_back_failures, 0u);
  disk.fail_sync(dir.sub(pool::kJournalFile), false);
  rewrite(3);
  pool->flush();
  pool->check_invariants();
  pool.reset();
  auto again = BufferPool::open(testing::small_options(dir.path(), 16));
  testing::expect_space(*again, s, 64, [](uint64_t) { return 3; });
}

// --- Defect 7: a thread that cannot create its io_uring -------------------------------------

// Lowers RLIMIT_NOFILE so that no new file descriptor (hence no io_uring) can be created;
// restores it when destroyed.
class NoMoreFds {
 public:
  NoMoreFds() {
    EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    int probe = ::dup(0);  // the lowest free descriptor
    EXPECT_GE(probe, 0);
    ::close(probe);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(probe);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  }
  ~NoMoreFds() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

// Runs fn with RLIMIT_NOFILE lowered; returns what it threw (nullptr if nothing), untouched
// until the limit is restored.
template <class Fn>
std::exception_ptr with_no_more_fds(Fn fn) {
  NoMoreFds limit;
  try {
    fn();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void rethrow_if(const std::exception_ptr& failure) {
  if (failure) std::rethrow_exception(failure);
}

// Runs fn in a fresh thread; false if it did not finish within 20 s. A leaked latch makes a
// flush or a pin wait forever: the thread is then abandoned (fn must capture by value only
// what outlives the test, e.g. a pool the caller then leaks), so the test fails, not hangs.
template <class Fn>
bool finishes(Fn fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread t([fn, done]() mutable {
    fn();
    done->set_value();
  });
  if (finished.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    t.detach();
    return false;
  }
  t.join();
  return true;
}

// Every page of the space can be pinned exclusively (so no latch is left behind), holds its
// value, and the pool's invariants hold. False if a pin hung.
bool expect_all_pinnable(BufferPool* pool, SpaceId s, uint64_t pages) {
  EXPECT_NO_THROW(pool->check_invariants());
  for (BlockId b = 0; b < pages; ++b) {
    auto value = std::make_shared<std::atomic<uint64_t>>(0);
    bool ok = finishes([pool, s, b, value] {
      ExclusiveGuard g = pool->pin_exclusive(PageId(s, b));
      value->store(test::pattern_stamp(g.data()));
    });
    if (!ok) {
      ADD_FAILURE() << "page " << b << " stays latched";
      return false;
    }
    EXPECT_EQ(value->load(), 10 + b);
  }
  return true;
}

// UBSan's vptr check (the ASan+UBSan suite) verifies an object's type by probing memory
// through a pipe: with no descriptor left it reports every Error constructed then as an
// "invalid vptr". These two tests therefore run in the release and TSan suites only.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_WITHOUT_FDS_UNDER_UBSAN() \
  GTEST_SKIP() << "UBSan's vptr check needs file descriptors; runs in the release and TSan suites"
#else
#define SKIP_WITHOUT_FDS_UNDER_UBSAN() (void)0
#endif

TEST(FaultInjection, FlushFromAThreadWithoutRingLeaksNoLatch) {
  SKIP_WITHOUT_FDS_UNDER_UBSAN();
  TempDir dir;
  auto pool = BufferPool::open(testing::small_options(dir.path(), 8));
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, 8, [](uint64_t b) { return 10 + b; });  // 8 dirty frames
  BufferPool* p = pool.get();
  bool finished = finishes([p] {
    // This fresh thread cannot create its ring. The error is inspected only once the limit is
    // lifted: UBSan's vptr check of a member call needs file descriptors of its own.
    std::exception_ptr failure = with_no_more_fds([p] { p->flush(); });
    Error e = expect_error(ErrorCode::kIoError, [&] { rethrow_if(failure); });
    EXPECT_NE(std::string(e.what()).find("io_uring"), std::string::npos) << e.what();
  });
  if (!finished || !expect_all_pinnable(p, s, 8)) {
    ADD_FAILURE() << "a latch leaked";
    (void)pool.release();  // latched forever: it cannot be closed
    return;
  }
  pool->flush();
}

TEST(FaultInjection, EvictionFromAThreadWithoutRingLeaksNoLatch) {
  SKIP_WITHOUT_FDS_UNDER_UBSAN();
  TempDir dir;
  PoolOptions o = testing::small_options(dir.path(), 8);
  o.eviction_batch = 1;  // low watermark 0: nothing is evicted before the pool is full
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, 8, [](uint64_t b) { return 10 + b; });  // full, all dirty
  BufferPool* p = pool.get();
  bool finished = finishes([p, s] {
    // Needs a frame: eviction, whose write-back needs this thread's ring.
    std::exception_ptr failure = with_no_more_fds([p, s] { p->allocate(s); });
    expect_error(ErrorCode::kIoError, [&] { rethrow_if(failure); });
  });
  if (!finished || !expect_all_pinnable(p, s, 8)) {
    ADD_FAILURE() << "a latch leaked";
    (void)pool.release();
    return;
  }
  pool->flush();
}

// --- Defect 8: one page whose write-back keeps failing ---------------------------------------

TEST(FaultInjection, FailingWriteBackOfOnePageFailsNoOtherRead) {
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 16);
  o.testing.fault_injector = &disk;
  constexpr uint64_t kClean = 64;
  SpaceId bad, good;
  {
    auto pool = BufferPool::open(o);
    bad = pool->create_space("bad");
    good = pool->create_space("good");
    testing::fill_space(*pool, good, kClean, [](uint64_t b) { return 1000 + b; });
    pool->flush();
    disk.fail_writes(space_file(dir, bad), true);
    testing::fill_space(*pool, bad, 1, [](uint64_t) { return 7; });  // dirty, cannot be written
    int failures = 0;
    for (int round = 0; round < 20; ++round) {
      for (BlockId b = 0; b < kClean; ++b) {
        try {
          SharedGuard g = pool->pin_shared(PageId(good, b));
          EXPECT_EQ(test::pattern_stamp(g.data()), 1000 + b);
        } catch (const Error& e) {
          if (++failures <= 3) ADD_FAILURE() << "pin of a clean page failed: " << e.what();
        }
      }
    }
    EXPECT_EQ(failures, 0) << "of " << 20 * kClean << " pins";
    PoolStats st = pool->stats();
    EXPECT_GT(st.write_back_failures, 0u) << "the failing page was never tried";
    {
      SharedGuard g = pool->pin_shared(PageId(bad, 0));  // still in memory, still right
      EXPECT_EQ(test::pattern_stamp(g.data()), 7u);
    }
    pool->check_invariants();
    disk.fail_writes(space_file(dir, bad), false);
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 16));
  testing::expect_space(*pool, bad, 1, [](uint64_t) { return 7; });
}

// A page flushed with one value, then changed, whose write-backs fail while the pool evicts
// around it: every read in the same pool returns the changed value, never the flushed one on
// disk (the case the random model used to accept), until a write-back succeeds; then a
// reopened pool reads it too.
TEST(FaultInjection, APageWhoseWriteBackFailedReadsItsLatestValueNotTheFlushedOne) {
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 8);
  o.testing.fault_injector = &disk;
  constexpr uint64_t kOthers = 32;
  SpaceId s, other;
  {
    auto pool = BufferPool::open(o);
    s = pool->create_space("data");
    other = pool->create_space("other");
    testing::fill_space(*pool, s, 1, [](uint64_t) { return 1; });
    testing::fill_space(*pool, other, kOthers, [](uint64_t b) { return 100 + b; });
    pool->flush();  // page s:0 is durable with stamp 1
    {
      ExclusiveGuard g = pool->pin_exclusive(PageId(s, 0));
      stamp(g, pool->usable_page_size(), 2);
    }
    disk.fail_writes(space_file(dir, s), true);
    const uint64_t failures_before = pool->stats().write_back_failures;
    for (int round = 0; round < 4; ++round) {
      for (BlockId b = 0; b < kOthers; ++b) {  // 4x the frames: CLOCK takes s:0 as a victim
        SharedGuard g = pool->pin_shared(PageId(other, b));
        EXPECT_EQ(test::pattern_stamp(g.data()), 100 + b);
      }
      SharedGuard g = pool->pin_shared(PageId(s, 0));
      ASSERT_EQ(test::pattern_stamp(g.data()), 2u) << "round " << round << ": the change was dropped";
    }
    EXPECT_GT(pool->stats().write_back_failures, failures_before) << "the page was never a victim";
    pool->check_invariants();
    disk.fail_writes(space_file(dir, s), false);
    for (BlockId b = 0; b < kOthers; ++b) (void)pool->pin_shared(PageId(other, b));  // written back now
    {
      SharedGuard g = pool->pin_shared(PageId(s, 0));
      EXPECT_EQ(test::pattern_stamp(g.data()), 2u);
    }
  }
  auto pool = BufferPool::open(testing::small_options(dir.path(), 8));
  testing::expect_space(*pool, s, 1, [](uint64_t) { return 2; });
}

TEST(FaultInjection, NoFrameBecauseWriteBacksFailIsAnIoErrorNamingThePage) {
  TempDir dir;
  CountingDisk disk;
  PoolOptions o = testing::small_options(dir.path(), 4);
  o.testing.fault_injector = &disk;
  o.eviction_batch = 1;  // low watermark 0: nothing is evicted before the pool is full
  auto pool = BufferPool::open(o);
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, 4, [](uint64_t b) { return 50 + b; });  // every frame dirty
  disk.fail_writes(space_file(dir, s), true);
  Error e = expect_error(ErrorCode::kIoError, [&] { pool->allocate(s); });
  EXPECT_EQ(e.page().space(), s) << e.what();
  EXPECT_LT(e.page().block(), 4u) << e.what();
  EXPECT_NE(std::string(e.what()).find(std::to_string(s) + ":" + std::to_string(e.page().block())),
            std::string::npos)
      << e.what();
  pool->check_invariants();
  disk.fail_writes(space_file(dir, s), false);
  testing::expect_space(*pool, s, 4, [](uint64_t b) { return 50 + b; });
  pool->flush();
}

// --- Randomized faults against a model --------------------------------------------------------

enum FaultClass {
  kReadEio,
  kReadShort,
  kWriteEio,
  kWriteShort,
  kWriteEnospc,
  kExtendEnospc,
  kSyncFail,
  kTornWrite,
  kFaultClasses
};
constexpr std::array<const char*, kFaultClasses> kFaultNames = {
    "read-EIO", "read-short", "write-EIO", "write-short", "write-ENOSPC", "extend-ENOSPC", "fsync", "torn-write"};

// Decides each transfer's fate when it is issued (transfer_bytes) and reports it when it
// completes (on_complete). Torn writes that report success are remembered per (file,
// block) until the block is written whole again: only those may fail their checksum.
class RandomDisk : public io::FaultInjector {
 public:
  explicit RandomDisk(uint64_t seed) : rng_(seed) {}
  std::atomic<bool> armed{false};
  std::array<std::atomic<uint64_t>, kFaultClasses> injected{};

  uint32_t transfer_bytes(bool is_write, int fd, uint64_t offset, uint32_t len) override {
    std::lock_guard lock(mu_);
    Fate fate = kNone;
    if (armed.load()) {
      std::uniform_real_distribution<double> u(0, 1);
      double x = u(rng_);
      if (is_write) {
        fate = x < 0.03 ? kFateWriteEio : x < 0.06 ? kFateWriteShort : x < 0.09 ? kFateWriteEnospc
               : x < 0.11 ? (u(rng_) < 0.5 ? kFateTornOk : kFateTornEio) : kNone;
      } else {
        fate = x < 0.03 ? kFateReadEio : x < 0.06 ? kFateReadShort : kNone;
      }
    }
    fates_[{is_write, fd, offset}] = fate;
    switch (fate) {
      case kFateWriteShort: case kFateTornOk: case kFateTornEio: case kFateReadShort:
        return len / 2;
      case kFateWriteEnospc:
      case kFateWriteEio:  // nothing reaches the file: a pool that dropped the page would read older bytes
        return 0;
      default:
        return len;
    }
  }

  int on_complete(bool is_write, int fd, uint64_t offset, uint32_t len, int result) override {
    std::lock_guard lock(mu_);
    auto it = fates_.find({is_write, fd, offset});
    Fate fate = it == fates_.end() ? kNone : it->second;
    if (it != fates_.end()) fates_.erase(it);
    const auto block = std::make_pair(fd_path(fd), offset / len);
    switch (fate) {
      case kNone:
        if (is_write && result == static_cast<int>(len)) {
          torn_.erase(block);
          partial_.erase(block);
        }
        return result;
      case kFateReadEio: ++injected[kReadEio]; return -EIO;
      case kFateReadShort: ++injected[kReadShort]; return result;
      case kFateWriteEio: ++injected[kWriteEio]; return -EIO;
      case kFateWriteShort: ++injected[kWriteShort]; partial_.insert(block); return result;
      case kFateWriteEnospc: ++injected[kWriteEnospc]; return -ENOSPC;
      case kFateTornOk:
        ++injected[kTornWrite];
        if (result == static_cast<int>(len / 2)) torn_.insert(block);
        partial_.insert(block);
        return static_cast<int>(len);  // the device says done; half of it is on disk
      case kFateTornEio: ++injected[kTornWrite]; partial_.insert(block); return -EIO;
    }
    return result;
  }

  int on_extend(int, uint64_t) override {
    std::lock_guard lock(mu_);
    if (!armed.load() || std::uniform_real_distribution<double>(0, 1)(rng_) >= 0.5) return 0;
    ++injected[kExtendEnospc];
    return -ENOSPC;
  }

  int on_sync(int, int result) override {
    std::lock_guard lock(mu_);
    if (!armed.load() || std::uniform_real_distribution<double>(0, 1)(rng_) >= 0.15) return result;
    ++injected[kSyncFail];
    return -EIO;
  }

  bool torn(const std::string& path, BlockId block) {
    std::lock_guard lock(mu_);
    return torn_.count({path, block}) != 0;
  }
  // Whether the file's block holds part of a write (torn, short): failed writes may damage
  // a block on a real disk too, so a crash may find it so, though the pool kept the page.
  bool partial(const std::string& path, BlockId block) {
    std::lock_guard lock(mu_);
    return partial_.count({path, block}) != 0;
  }

 private:
  enum Fate { kNone, kFateReadEio, kFateReadShort, kFateWriteEio, kFateWriteShort, kFateWriteEnospc,
              kFateTornOk, kFateTornEio };
  std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<std::tuple<bool, int, uint64_t>, Fate> fates_;
  std::set<std::pair<std::string, uint64_t>> torn_;
  std::set<std::pair<std::string, uint64_t>> partial_;  // written in part since the last whole write
};

// The model of one page. While a pool lives, a page reads back exactly `current`, whatever
// write-back, flush or sync failed before (README rule 6: "A page write that fails is the
// page's: it stays dirty and in memory"), or fails with a typed error (a failed read; a
// checksum mismatch only for a block whose write the device reported done but tore). After
// a clean close and a reopen (rule 6: a page below the durable count holds its value as of
// the last flush or a later one; the close's flush is the last), it reads back `durable`,
// which that flush made equal to `current`. After a crash (the files copied as they are while
// the pool lives, and opened by another pool), rule 6's own words: "a page below the durable
// count holds its value as of that flush or a later one": one of `since_flush`.
struct ModelPage {
  uint64_t current = 0;  // last stamp written into memory (0: the zero page of allocate)
  uint64_t durable = 0;  // stamp when the last successful flush returned
  std::vector<uint64_t> since_flush;  // durable, then every stamp written since (or since allocate)
  void write(uint64_t v) {
    current = v;
    since_flush.push_back(v);
  }
  void flushed() {
    durable = current;
    since_flush.assign(1, current);
  }
};

class FaultModel {
 public:
  FaultModel(const TempDir& dir, RandomDisk& disk, uint64_t seed) : dir_(dir), disk_(disk), rng_(seed) {}

  void run(int ops) {
    PoolOptions o = testing::small_options(dir_.path(), kFrames);
    o.testing.fault_injector = &disk_;
    o.async_depth = 8;
    pool_ = BufferPool::open(o);
    for (const char* name : {"s0", "s1"}) {
      spaces_.push_back(pool_->create_space(name));
      pages_.emplace_back();
      flushed_blocks_.push_back(0);
    }
    disk_.armed = true;
    for (int op = 0; op < ops && !::testing::Test::HasFatalFailure(); ++op) {
      step();
      if (op % 250 == 249) checkpoint();
      if (op % 100 == 99) crash_check();
      if (op % 300 == 299) reopen();
    }
    checkpoint();
    // Faults off: the flush that must now succeed makes everything durable; a reopened
    // pool reads back every page's last value (or a checksum error for a torn block).
    disk_.armed = false;
    pool_->flush();
    pool_->check_invariants();
    flushed();
    pool_.reset();
    pool_ = BufferPool::open(testing::small_options(dir_.path(), kFrames));
    verify_all(/*faults_armed=*/false);
    pool_.reset();
  }

 private:
  static constexpr uint32_t kFrames = 16;

  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  size_t random_space() { return pick(spaces_.size()); }
  bool random_page(size_t* sp, BlockId* b) {
    *sp = random_space();
    if (pages_[*sp].empty()) return false;
    *b = static_cast<BlockId>(pick(pages_[*sp].size()));
    return true;
  }

  // An error is acceptable only if typed as a failed read (while faults are armed) or as a
  // checksum mismatch of a block a torn write left behind (the device said the write was
  // done: the pool cannot know, and must not hand out the torn bytes). Nothing else: a
  // page whose write-back failed is still in memory and reads back without any I/O.
  void accept_error(const Error& e, size_t sp, BlockId b, bool faults_armed) {
    switch (e.code()) {
      case ErrorCode::kIoError:
      case ErrorCode::kShortRead:
        EXPECT_TRUE(faults_armed) << "page " << sp << ":" << b << ": " << e.what();
        break;
      case ErrorCode::kChecksumMismatch:
        EXPECT_TRUE(disk_.torn(space_file(dir_, spaces_[sp]), b))
            << "page " << sp << ":" << b << " fails its checksum without a torn write: " << e.what();
        break;
      default:
        ADD_FAILURE() << "page " << sp << ":" << b << ": unexpected " << e.what();
    }
  }

  // The bytes of a page: exactly its current value (ModelPage). Zeros only for a page that
  // was never written after allocate.
  void expect_value(const std::byte* data, size_t sp, BlockId b) {
    const ModelPage& p = pages_[sp][b];
    const PageId pid(spaces_[sp], b);
    const size_t usable = pool_->usable_page_size();
    bool zero = std::all_of(data, data + usable, [](std::byte x) { return x == std::byte{0}; });
    if (zero) {
      EXPECT_EQ(p.current, 0u) << "page " << sp << ":" << b << " reads as zeros, not its current stamp "
                               << p.current << " (durable " << p.durable << ")";
      return;
    }
    ASSERT_TRUE(test::check_pattern(data, usable, pid)) << "page " << sp << ":" << b << " holds garbage";
    uint64_t got = test::pattern_stamp(data);
    EXPECT_EQ(got, p.current) << "page " << sp << ":" << b << " reads stamp " << got << ", not its current "
                              << p.current << " (durable " << p.durable << ")";
  }

  void read_page(size_t sp, BlockId b, bool faults_armed) {
    try {
      SharedGuard g = pool_->pin_shared(PageId(spaces_[sp], b));
      expect_value(g.data(), sp, b);
    } catch (const Error& e) {
      accept_error(e, sp, b, faults_armed);
    }
  }

  void step() {
    const uint64_t dice = pick(100);
    size_t sp;
    BlockId b;
    if (dice < 14) {  // allocate
      sp = random_space();
      try {
        ExclusiveGuard g = pool_->allocate(spaces_[sp]);
        ASSERT_EQ(g.page_id().block(), pages_[sp].size());
        uint64_t v = next_stamp_++;
        stamp(g, pool_->usable_page_size(), v);
        pages_[sp].push_back({v, 0, {v}});
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kIoError) << e.what();
        // A block claimed before the failure stays allocated, as a zero page.
        while (pages_[sp].size() < pool_->space_blocks(spaces_[sp])) pages_[sp].push_back({0, 0, {0}});
      }
    } else if (dice < 42) {  // modify
      if (!random_page(&sp, &b)) return;
      try {
        ExclusiveGuard g = pool_->pin_exclusive(PageId(spaces_[sp], b));
        expect_value(g.data(), sp, b);
        uint64_t v = next_stamp_++;
        stamp(g, pool_->usable_page_size(), v);
        pages_[sp][b].write(v);
      } catch (const Error& e) {
        accept_error(e, sp, b, true);
      }
    } else if (dice < 80) {  // read (and eviction pressure: the pages outnumber the frames)
      if (!random_page(&sp, &b)) return;
      read_page(sp, b, true);
    } else if (dice < 92) {  // prefetch a group, then read some of it
      std::vector<PageId> group;
      std::vector<std::pair<size_t, BlockId>> members;
      for (int i = 0; i < 6; ++i) {
        if (!random_page(&sp, &b)) continue;
        group.push_back(PageId(spaces_[sp], b));
        members.push_back({sp, b});
      }
      pool_->prefetch_group(group);
      for (size_t i = 0; i < members.size(); i += 2) read_page(members[i].first, members[i].second, true);
    } else if (dice < 98) {  // a burst of reads: a round of eviction or two
      for (uint32_t i = 0; i < kFrames; ++i) {
        if (random_page(&sp, &b)) read_page(sp, b, true);
      }
    } else {  // flush
      try {
        pool_->flush();
        flushed();
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kIoError) << e.what();
      }
    }
  }

  void verify_all(bool faults_armed) {
    for (size_t sp = 0; sp < pages_.size(); ++sp) {
      ASSERT_EQ(pool_->space_blocks(spaces_[sp]), pages_[sp].size());
      for (BlockId b = 0; b < pages_[sp].size(); ++b) read_page(sp, b, faults_armed);
    }
  }

  // Faults off: the pool closes (its flush succeeds, so every page is durable at its current
  // value) and opens again; every page reads back that value (rule 6), and the spaces have
  // exactly the blocks allocated (the durable count of that flush).
  void reopen() {
    disk_.armed = false;
    ASSERT_NO_THROW(pool_->flush());
    flushed();
    pool_.reset();
    PoolOptions o = testing::small_options(dir_.path(), kFrames);
    o.testing.fault_injector = &disk_;
    o.async_depth = 8;
    pool_ = BufferPool::open(o);
    verify_all(/*faults_armed=*/false);
    disk_.armed = true;
  }

  // A flush succeeded: every page is durable at its current value.
  void flushed() {
    for (size_t sp = 0; sp < pages_.size(); ++sp) {
      for (ModelPage& p : pages_[sp]) p.flushed();
      flushed_blocks_[sp] = pages_[sp].size();
    }
  }

  // A crash now: the files, as they are, copied to another directory and opened by another
  // pool (no faults). Rule 6: each space has the blocks of one flush, at least those of the
  // last successful one (a failed flush may have synced some spaces and counted their
  // blocks); each block below that count holds a value the page had at the last successful
  // flush or later, or fails its checksum if a write tore it or left part of it.
  void crash_check() {
    disk_.armed = false;
    const std::string copy = dir_.sub("crash");
    std::filesystem::remove_all(copy);
    std::filesystem::create_directory(copy);
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.is_regular_file()) std::filesystem::copy_file(e.path(), copy + "/" + e.path().filename().string());
    }
    {
      auto crashed = BufferPool::open(testing::small_options(copy, kFrames));
      for (size_t sp = 0; sp < pages_.size(); ++sp) {
        const uint64_t blocks = crashed->space_blocks(spaces_[sp]);
        EXPECT_GE(blocks, flushed_blocks_[sp]) << "space " << sp << " lost blocks of the last flush";
        ASSERT_LE(blocks, pages_[sp].size()) << "space " << sp;
        for (BlockId b = 0; b < blocks; ++b) {
          const ModelPage& p = pages_[sp][b];
          const PageId pid(spaces_[sp], b);
          const std::string where = "after a crash, page " + std::to_string(sp) + ":" + std::to_string(b);
          try {
            SharedGuard g = crashed->pin_shared(pid);
            const size_t usable = crashed->usable_page_size();
            uint64_t got = 0;
            if (!std::all_of(g.data(), g.data() + usable, [](std::byte x) { return x == std::byte{0}; })) {
              ASSERT_TRUE(test::check_pattern(g.data(), usable, pid)) << where << " holds garbage";
              got = test::pattern_stamp(g.data());
            }
            EXPECT_NE(std::find(p.since_flush.begin(), p.since_flush.end(), got), p.since_flush.end())
                << where << " reads stamp " << got << ", not one it had since the last flush (durable "
                << p.durable << ", current " << p.current << ")";
          } catch (const Error& e) {
            const std::string file = space_file(dir_, spaces_[sp]);
            EXPECT_TRUE(e.code() == ErrorCode::kChecksumMismatch && (disk_.torn(file, b) || disk_.partial(file, b)))
                << where << ": " << e.what();
          }
        }
      }
    }
    std::filesystem::remove_all(copy);
    disk_.armed = true;
  }

  // Faults off: nothing latched or leaked, every page reads back right.
  void checkpoint() {
    disk_.armed = false;
    ASSERT_NO_THROW(pool_->check_invariants());
    verify_all(/*faults_armed=*/false);
    ASSERT_NO_THROW(pool_->check_invariants());
    disk_.armed = true;
  }

  const TempDir& dir_;
  RandomDisk& disk_;
  std::mt19937_64 rng_;
  std::unique_ptr<BufferPool> pool_;
  std::vector<SpaceId> spaces_;
  std::vector<std::vector<ModelPage>> pages_;
  std::vector<uint64_t> flushed_blocks_;  // each space's blocks when the last successful flush returned
  uint64_t next_stamp_ = 1;
};

TEST(RandomFaults, NoFaultLosesDataSilentlyOrLeaksALatch) {
  // Bounded by the disk, not the CPU (fdatasync, O_DIRECT): about as long in sanitizer builds.
  constexpr uint64_t kSeeds[] = {1, 2, 3};
  constexpr int kOps = 700;
  std::array<uint64_t, kFaultClasses> total{};
  for (uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (replay: kSeeds = {" + std::to_string(seed) + "})");
    TempDir dir;
    RandomDisk disk(seed);
    FaultModel(dir, disk, seed * 7919).run(kOps);
    for (int c = 0; c < kFaultClasses; ++c) total[c] += disk.injected[c].load();
    if (::testing::Test::HasFailure()) {
      std::printf("fault injection failed with seed %llu\n", static_cast<unsigned long long>(seed));
      break;
    }
  }
  std::string line = "fault injection:";
  for (int c = 0; c < kFaultClasses; ++c) {
    line += std::string(c == 0 ? " " : ", ") + kFaultNames[c] + " " + std::to_string(total[c]);
  }
  std::printf("%s\n", line.c_str());
  for (int c = 0; c < kFaultClasses; ++c) EXPECT_GE(total[c], 3u) << kFaultNames[c] << " was hardly injected";
}

}  // namespace
}  // namespace calico
