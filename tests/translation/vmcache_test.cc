// Tests for translation/vmcache: page addresses, discard returning memory, the dense state
// array, reset, the address-space error, page-table accounting, the 2 MB split, and the
// pool running with pages in place (O_DIRECT into the region, checksums, eviction).
#include "translation/vmcache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calico/error.h"
#include "support/test_util.h"
#include "support/variants.h"
#include "calico/variants.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CALICO_VMCACHE_SANITIZED 1  // shadow memory has page tables of its own
#else
#define CALICO_VMCACHE_SANITIZED 0
#endif

namespace calico {
namespace {

using testing::expect_error;
using testing::TempDir;
using translation::OsPages;
using translation::VmcacheTable;

constexpr size_t kOsPage = memory::kOsPageBytes;
constexpr size_t kChunk = translation::kVmcacheChunkBytes;

// Page-table bytes of the whole process (/proc/self/status VmPTE).
size_t vm_pte_bytes() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmPTE: %zu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb * 1024;
}

// 4 KB pages of [base, base + len) that mincore reports resident.
size_t resident_os_pages(const std::byte* base, size_t len) {
  std::vector<unsigned char> vec(len / kOsPage);
  EXPECT_EQ(mincore(const_cast<std::byte*>(base), len, vec.data()), 0);
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

void fill(std::byte* p, size_t n, unsigned char v) { std::memset(p, v, n); }
bool all(const std::byte* p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{v}) return false;
  }
  return true;
}

// --- the table ----------------------------------------------------------------------------

TEST(VmcacheTable, PagesLiveAtRegionPlusBlockTimesPageSize) {
  for (size_t ps : {size_t{4096}, size_t{8192}, size_t{16384}}) {
    SCOPED_TRACE(ps);
    const uint64_t cap = 1 << 12;
    VmcacheTable t(cap, ps, OsPages::kSmall);
    EXPECT_EQ(t.capacity(), cap);
    EXPECT_EQ(t.page_size(), ps);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % kChunk, 0u) << "data region is 2 MB aligned";
    for (BlockId b : {BlockId{0}, BlockId{1}, BlockId{77}, BlockId{cap - 1}}) {
      EXPECT_EQ(t.page(b), t.data() + size_t{b} * ps);
      EXPECT_EQ(&t.entry(b), t.entries() + b) << "flat: the path cache keeps the base";
      EXPECT_EQ(translation::load(t.entry(b)).raw, 0u) << "fresh words read evicted";
    }
    // The last page is writable, and nothing was touched but it.
    fill(t.page(cap - 1), ps, 0x5A);
    EXPECT_TRUE(all(t.page(cap - 1), ps, 0x5A));
    EXPECT_EQ(t.data_resident_bytes(cap), ps);
    EXPECT_GE(t.reserved_bytes(), cap * (ps + sizeof(translation::Entry)));
  }
}

TEST(VmcacheTable, RejectsBadCapacityAndPageSize) {
  for (uint64_t cap : {uint64_t{0}, (uint64_t{1} << 32) + 1}) {
    expect_error(ErrorCode::kInvalidArgument, [&] { VmcacheTable t(cap, 4096, OsPages::kSmall); });
  }
  expect_error(ErrorCode::kInvalidArgument, [&] { VmcacheTable t(16, 2048, OsPages::kSmall); });
  expect_error(ErrorCode::kInvalidArgument, [&] { VmcacheTable t(16, 12288, OsPages::kSmall); });
}

TEST(VmcacheTable, DiscardReturnsThePagesMemoryAndLeavesOthers) {
  const size_t ps = 8192;
  const uint64_t pages = 256;
  VmcacheTable t(1 << 16, ps, OsPages::kSmall);
  for (BlockId b = 0; b < pages; ++b) fill(t.page(b), ps, static_cast<unsigned char>(b + 1));
  EXPECT_EQ(t.data_resident_bytes(pages), pages * ps);
  EXPECT_EQ(resident_os_pages(t.data(), pages * ps), pages * ps / kOsPage);
  for (BlockId b = 0; b < pages; b += 2) t.discard(b);
  EXPECT_EQ(t.data_resident_bytes(pages), pages / 2 * ps);
  for (BlockId b = 0; b < pages; ++b) {
    SCOPED_TRACE(b);
    if (b % 2 == 0) {
      EXPECT_TRUE(all(t.page(b), ps, 0)) << "a discarded page reads as zeros";
    } else {
      EXPECT_TRUE(all(t.page(b), ps, static_cast<unsigned char>(b + 1)));
    }
  }
  // Reading discarded pages maps the zero page: mincore counts it, no private memory is used.
  EXPECT_EQ(resident_os_pages(t.data(), pages * ps), pages * ps / kOsPage);
  for (BlockId b = 1; b < pages; b += 2) t.discard(b);
  EXPECT_EQ(t.data_huge_page_bytes(), 0u);
  // The page comes back at the same address.
  fill(t.page(3), ps, 0xEE);
  EXPECT_TRUE(all(t.page(3), ps, 0xEE));
}

TEST(VmcacheTable, StateArrayIsDenseLazyAndNeverPunched) {
  const uint64_t cap = 1 << 20;  // 8 MB of state words
  VmcacheTable t(cap, 4096, OsPages::kSmall);
  EXPECT_EQ(t.private_bytes(cap), 0u) << "nothing touched, nothing costs";
  // One word in each of 10 pages of words.
  for (uint64_t i = 0; i < 10; ++i) {
    BlockId b = static_cast<BlockId>(i * 512 + 3);
    t.acquire_ref(b);
    t.entry(b).store(translation::EntryWord::make(1, 2, translation::kUnlocked).raw);
  }
  // 10 pages of words; the 10 blocks lie in 10 chunks of 2 MB (512 pages of 4 KB each),
  // mapped by 10 PTE tables and their PMD and PUD tables.
  EXPECT_EQ(t.page_tables(cap).pte_tables, 10u);
  const size_t tables = t.page_tables(cap).table_bytes();
  EXPECT_GE(tables, 12 * kOsPage);
  EXPECT_EQ(t.private_bytes(cap), 10 * kOsPage + tables);
  // Evicting writes zero back, but the array is dense: release_ref returns nothing.
  for (uint64_t i = 0; i < 10; ++i) {
    BlockId b = static_cast<BlockId>(i * 512 + 3);
    t.entry(b).store(0);
    EXPECT_FALSE(t.release_ref(b));
  }
  EXPECT_EQ(t.private_bytes(cap), 10 * kOsPage + tables);
  EXPECT_EQ(t.mincore_bytes(cap), 10 * kOsPage + tables);
}

TEST(VmcacheTable, ResetZeroesStatesAndReturnsDataAndPageTables) {
  const uint64_t cap = 1 << 14;
  VmcacheTable t(cap, 4096, OsPages::kSmall);
  for (BlockId b = 0; b < cap; b += 97) {
    t.acquire_ref(b);
    t.entry(b).store(translation::EntryWord::make(b + 1, 1, translation::kUnlocked).raw);
    fill(t.page(b), 4096, 0x33);
  }
  EXPECT_GT(t.private_bytes(cap), 0u);
  EXPECT_GT(t.data_resident_bytes(cap), 0u);
  t.reset();
  for (BlockId b = 0; b < cap; b += 97) {
    EXPECT_EQ(translation::load(t.entry(b)).raw, 0u);
    EXPECT_TRUE(all(t.page(b), 4096, 0));
  }
  // The reads above mapped the zero page (mincore counts it); no private memory remains.
  EXPECT_EQ(t.private_bytes(cap), 0u);
  EXPECT_EQ(t.page_tables(cap).pte_tables, 0u);
  t.reset();
  EXPECT_EQ(t.data_resident_bytes(cap), 0u);
  // Usable again.
  fill(t.page(5), 4096, 0x44);
  EXPECT_TRUE(all(t.page(5), 4096, 0x44));
}

TEST(VmcacheTable, AddressSpaceExhaustionIsAClearError) {
  // 2^32 blocks of 16 KB reserve 64 TB each: the 128 TB user address space holds one.
  std::vector<std::unique_ptr<VmcacheTable>> tables;
  std::string message;
  for (int i = 0; i < 8 && message.empty(); ++i) {
    try {
      tables.push_back(std::make_unique<VmcacheTable>(uint64_t{1} << 32, 16384, OsPages::kSmall));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      message = e.what();
    }
  }
  ASSERT_FALSE(message.empty()) << "8 x 64 TB of address space were reserved";
  EXPECT_LE(tables.size(), 1u);
  EXPECT_NE(message.find("at most 1 such spaces fit"), std::string::npos) << message;
  EXPECT_NE(message.find("max_blocks_per_space"), std::string::npos) << message;
  // What did fit still works, and its reservation cost no memory.
  for (auto& t : tables) {
    fill(t->page(0xFFFFFFFFu), 16384, 7);
    EXPECT_TRUE(all(t->page(0xFFFFFFFFu), 16384, 7));
  }
}

TEST(VmcacheTable, PageTableAccountingMatchesTheKernel) {
  const uint64_t chunks = 64;  // one page in each of 64 chunks of 2 MB
  const uint64_t per_chunk = kChunk / 4096;
  VmcacheTable t(chunks * per_chunk, 4096, OsPages::kSmall);
  size_t pte_before = vm_pte_bytes();
  for (uint64_t c = 0; c < chunks; ++c) {
    BlockId b = static_cast<BlockId>(c * per_chunk + 5);
    t.acquire_ref(b);
    fill(t.page(b), 4096, 1);
  }
  translation::PageTableUse use = t.page_tables(chunks * per_chunk);
  EXPECT_EQ(use.pte_tables, chunks);
  EXPECT_GE(use.pmd_tables, 1u);
  EXPECT_LE(use.pmd_tables, 2u);  // 128 MB lies in at most two 1 GB ranges
  EXPECT_GE(use.pud_tables, 1u);
  EXPECT_EQ(use.present_pages, chunks);
  EXPECT_EQ(use.huge_pages, 0u);
  EXPECT_EQ(use.entry_bytes(), chunks * 8) << "the 8-bytes-per-PTE lower bound";
  EXPECT_EQ(use.table_bytes(), 4096 * (chunks + use.pmd_tables + use.pud_tables));
  size_t grown = vm_pte_bytes() - pte_before;
  std::printf("[vmcache] %zu pages one per 2 MB: VmPTE +%zu kB, estimate %zu kB (8 B/PTE: %zu B)\n",
              static_cast<size_t>(chunks), grown / 1024, use.table_bytes() / 1024, use.entry_bytes());
  if (!CALICO_VMCACHE_SANITIZED) {
    // The kernel's page tables grew by one PTE table per chunk (+ at most two upper tables).
    EXPECT_GE(grown, chunks * 4096);
    EXPECT_LE(grown, use.table_bytes() + 2 * 4096);
  }
  // Evicting page by page returns the pages but not the tables: the estimate keeps them.
  size_t pte_full = vm_pte_bytes();
  for (uint64_t c = 0; c < chunks; ++c) t.discard(static_cast<BlockId>(c * per_chunk + 5));
  EXPECT_EQ(t.page_tables(chunks * per_chunk).present_pages, 0u);
  EXPECT_EQ(t.page_tables(chunks * per_chunk).pte_tables, chunks);
  size_t pte_after = vm_pte_bytes();
  std::printf("[vmcache] after discarding each page: VmPTE %+ld kB, estimate %zu kB\n",
              (static_cast<long>(pte_after) - static_cast<long>(pte_full)) / 1024,
              t.page_tables(chunks * per_chunk).table_bytes() / 1024);
  if (!CALICO_VMCACHE_SANITIZED) {
    EXPECT_GE(pte_after + 4096, pte_full);
  }
  t.reset();
  EXPECT_EQ(t.page_tables(chunks * per_chunk).table_bytes(), 0u);
  std::printf("[vmcache] after reset: VmPTE %+ld kB from the start\n",
              (static_cast<long>(vm_pte_bytes()) - static_cast<long>(pte_before)) / 1024);
}

// The 2 MB problem: a 4 KB discard inside a transparent huge page splits it.
TEST(VmcacheTable, HugeHintSplitsHugePagesOnDiscard) {
  const uint64_t chunks = 4;
  const uint64_t blocks = chunks * kChunk / 4096;
  VmcacheTable t(blocks, 4096, OsPages::kHuge);
  for (BlockId b = 0; b < blocks; ++b) fill(t.page(b), 4096, 9);
  size_t huge_before = t.data_huge_page_bytes();
  size_t rss_before = t.data_resident_bytes(blocks);
  std::printf("[vmcache_2m] %zu MB written: AnonHugePages %zu kB, resident %zu kB\n",
              static_cast<size_t>(chunks * 2), huge_before / 1024, rss_before / 1024);
  if (huge_before == 0) {
    GTEST_SKIP() << "the kernel gave no transparent huge page (THP off or no free 2 MB pages)";
  }
  // Evict one page in each of the first two chunks.
  t.discard(7);
  t.discard(static_cast<BlockId>(kChunk / 4096 + 300));
  size_t huge_after = t.data_huge_page_bytes();
  size_t rss_after = t.data_resident_bytes(blocks);
  std::printf("[vmcache_2m] after discarding 1 page in 2 chunks: AnonHugePages %zu kB, resident %zu kB\n",
              huge_after / 1024, rss_after / 1024);
  EXPECT_EQ(huge_before - huge_after, 2 * kChunk) << "each discard split its huge page";
  EXPECT_EQ(rss_before - rss_after, 2 * 4096u) << "but returned only the page's 4 KB";
  EXPECT_TRUE(all(t.page(7), 4096, 0));
  EXPECT_TRUE(all(t.page(8), 4096, 9));
  translation::PageTableUse use = t.page_tables(blocks);
  EXPECT_EQ(use.huge_pages * kChunk, huge_after);
  // The small-page variant never maps huge pages.
  VmcacheTable small(blocks, 4096, OsPages::kSmall);
  for (BlockId b = 0; b < blocks; ++b) fill(small.page(b), 4096, 9);
  EXPECT_EQ(small.data_huge_page_bytes(), 0u);
}

// --- the pool with pages in place --------------------------------------------------------

template <class Pool>
class VmcachePool : public ::testing::Test {};
using VmcachePools = ::testing::Types<BasicBufferPool<translation::VmcacheTranslation>,
                                      BasicBufferPool<translation::Vmcache2mTranslation>>;
TYPED_TEST_SUITE(VmcachePool, VmcachePools, testing::PoolName);

auto stamp_of = [](uint64_t b) { return 1000 + b; };

TYPED_TEST(VmcachePool, PagesStayInPlaceAndEvictionReturnsTheirMemory) {
  using Pool = TypeParam;
  TempDir dir;
  const uint32_t frames = 16;
  const uint64_t pages = 600;  // > 2 MB of 4 KB pages
  auto pool = Pool::open(testing::small_options(dir.path(), frames));
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, pages, stamp_of);
  const std::byte* base;
  {
    SharedGuard g = pool->pin_shared(PageId(s, 0));
    base = g.data();
  }
  const size_t chunks_len = (pages * 4096 + kChunk - 1) / kChunk * kChunk;  // whole chunks
  std::printf("[%s] after writing %zu pages through %u frames: region resident %zu kB (huge %zu kB)\n",
              std::string(Pool::kTranslationName).c_str(), static_cast<size_t>(pages), frames,
              resident_os_pages(base, chunks_len) * 4, memory::smaps_bytes(base, chunks_len, "AnonHugePages") / 1024);
  // Every page, whenever resident, is at base + block * page_size.
  for (uint64_t b = 0; b < pages; b += 37) {
    SharedGuard g = pool->pin_shared(PageId(s, static_cast<BlockId>(b)));
    EXPECT_EQ(g.data(), base + b * 4096);
  }
  testing::expect_space(*pool, s, pages, stamp_of);
  pool->check_invariants();
  PoolStats st = pool->stats();
  EXPECT_GT(st.evictions, pages - frames);
  EXPECT_LE(st.resident_pages, frames);
  EXPECT_EQ(st.frame_huge_page_bytes, 0u) << "the frame arena is never touched";
  size_t resident = resident_os_pages(base, chunks_len);
  size_t huge = memory::smaps_bytes(base, chunks_len, "AnonHugePages");
  std::printf("[%s] %zu pages, %u frames: %zu resident pages, region resident %zu kB (huge %zu kB)\n",
              std::string(Pool::kTranslationName).c_str(), static_cast<size_t>(pages), frames,
              static_cast<size_t>(st.resident_pages), resident * 4, huge / 1024);
  if constexpr (std::is_same_v<typename Pool::TranslationPolicy, translation::VmcacheTranslation>) {
    EXPECT_EQ(resident, st.resident_pages) << "exactly the resident pages hold memory";
  } else {
    EXPECT_GE(resident, st.resident_pages);  // plus what split huge pages kept (vmcache.h)
  }
  // Translation memory: the state words and the page tables of the touched chunks.
  EXPECT_GE(st.translation_private_bytes, 4096 + 2 * 4096u);
  EXPECT_GE(st.translation_mincore_bytes, st.translation_private_bytes);
  EXPECT_GE(st.translation_reserved_bytes, (uint64_t{1} << 20) * (4096 + 8));
}

TYPED_TEST(VmcachePool, DirectReadsLandInTheRegionAndChecksumsVerify) {
  using Pool = TypeParam;
  TempDir dir;
  const uint64_t pages = 64;
  SpaceId s;
  {
    auto pool = Pool::open(testing::small_options(dir.path(), 8));
    s = pool->create_space("data");
    testing::fill_space(*pool, s, pages, stamp_of);
  }  // closing flushes
  // Corrupt block 9 on disk.
  std::string path = dir.sub("space_" + std::to_string(s) + ".dat");
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char junk[64];
  std::memset(junk, 0x77, sizeof junk);
  ASSERT_EQ(::pwrite(fd, junk, sizeof junk, 9 * 4096 + 200), static_cast<ssize_t>(sizeof junk));
  ::close(fd);

  auto pool = Pool::open(testing::small_options(dir.path(), 8));
  for (uint64_t b = 0; b < pages; ++b) {
    PageId pid(s, static_cast<BlockId>(b));
    if (b == 9) {
      Error e = expect_error(ErrorCode::kChecksumMismatch, [&] { pool->pin_shared(pid); });
      EXPECT_EQ(e.page(), pid);
      continue;
    }
    SharedGuard g = pool->pin_shared(pid);
    ASSERT_TRUE(test::check_pattern(g.data(), pool->usable_page_size(), pid)) << b;
    EXPECT_EQ(test::pattern_stamp(g.data()), stamp_of(b));
    // The kernel allocated the page during the read: it is resident where it lives.
    EXPECT_EQ(resident_os_pages(g.data(), 4096), 1u);
  }
  PoolStats st = pool->stats();
  EXPECT_TRUE(st.direct_io) << "O_DIRECT into the reserved region";
  EXPECT_GE(st.faults, pages - 1);
  pool->check_invariants();
}

// Optimistic readers on a pool that evicts constantly: reads of discarded pages (zeros) or
// of pages being reloaded never validate, and never crash.
TYPED_TEST(VmcachePool, OptimisticReadersSurviveDiscardsAndValidateOnlyGoodPages) {
  using Pool = TypeParam;
  TempDir dir;
  const uint64_t pages = 96;
  auto pool = Pool::open(testing::small_options(dir.path(), 6));
  SpaceId s = pool->create_space("data");
  testing::fill_space(*pool, s, pages, stamp_of);
  pool->flush();
  std::atomic<uint64_t> bad{0}, reads{0}, zero_attempts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(0xC0FFEE + t);
      for (int i = 0; i < 3000; ++i) {
        PageId pid(s, static_cast<BlockId>(rng() % pages));
        bool ok = pool->optimistic_read(pid, [&](const std::byte* p) {
          uint64_t stamp = 0;
          bool good = test::check_pattern_racy(p, pool->usable_page_size(), pid, &stamp);
          if (!good && stamp == 0) zero_attempts.fetch_add(1, std::memory_order_relaxed);
          return good && stamp == stamp_of(pid.block());
        });
        if (!ok) bad.fetch_add(1);
        reads.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0u) << "a validated read returned a wrong page";
  EXPECT_EQ(reads.load(), 4u * 3000);
  std::printf("[%s] %llu optimistic attempts saw a zeroed (discarded) page and were retried\n",
              std::string(Pool::kTranslationName).c_str(), static_cast<unsigned long long>(zero_attempts.load()));
  pool->check_invariants();
}

TYPED_TEST(VmcachePool, DropReturnsTheSpacesMemory) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::small_options(dir.path(), 32));
  SpaceId keep = pool->create_space("keep");
  SpaceId gone = pool->create_space("gone");
  testing::fill_space(*pool, keep, 10, stamp_of);
  testing::fill_space(*pool, gone, 20, stamp_of);
  const std::byte* base;
  {
    SharedGuard g = pool->pin_shared(PageId(gone, 0));
    base = g.data();
  }
  EXPECT_GT(resident_os_pages(base, 20 * 4096), 0u);
  size_t before = pool->stats().translation_private_bytes;
  pool->drop_space(gone);
  EXPECT_EQ(resident_os_pages(base, 20 * 4096), 0u) << "reset returns every page of the region";
  EXPECT_LT(pool->stats().translation_private_bytes, before);
  testing::expect_space(*pool, keep, 10, stamp_of);
  pool->check_invariants();
}

// The 2 MB variant in an in-memory run gets huge pages; a sparse working set costs a
// huge page per 2 MB chunk touched, far beyond the frame budget; eviction splits them.
TEST(Vmcache2mPool, HugePagesInMemorySparseCostAndSplitOnEviction) {
  using Pool = BasicBufferPool<translation::Vmcache2mTranslation>;
  TempDir dir;
  const uint64_t per_chunk = kChunk / 4096;
  const uint64_t chunks = 16;
  SpaceId s;
  {
    auto pool = Pool::open(testing::small_options(dir.path(), 64));
    s = pool->create_space("data");
    testing::fill_space(*pool, s, chunks * per_chunk, stamp_of);
  }
  // One page in each chunk, 32 frames: nothing is evicted.
  auto pool = Pool::open(testing::small_options(dir.path(), 32));
  const std::byte* base;
  {
    SharedGuard g = pool->pin_shared(PageId(s, 0));
    base = g.data();
  }
  for (uint64_t c = 1; c < chunks; ++c) pool->pin_shared(PageId(s, static_cast<BlockId>(c * per_chunk)));
  const size_t len = chunks * kChunk;
  size_t huge = memory::smaps_bytes(base, len, "AnonHugePages");
  size_t resident = resident_os_pages(base, len) * 4096;
  PoolStats st = pool->stats();
  std::printf("[vmcache_2m] %llu pages resident, one per 2 MB chunk (budget %llu frames = %llu kB): region "
              "resident %zu kB, AnonHugePages %zu kB, translation %zu kB\n",
              static_cast<unsigned long long>(st.resident_pages), static_cast<unsigned long long>(st.frames),
              static_cast<unsigned long long>(st.frames * 4), resident / 1024, huge / 1024,
              st.translation_private_bytes / 1024);
  EXPECT_EQ(st.evictions, 0u);
  EXPECT_EQ(st.resident_pages, chunks);
  if (huge == 0) GTEST_SKIP() << "the kernel gave no transparent huge page";
  EXPECT_GT(resident, st.frames * 4096) << "memory is not bounded by the frame budget";
  // Fill the pool so that it evicts: the chunks the victims lie in lose their huge pages.
  for (uint64_t b = 1; b < 64; ++b) pool->pin_shared(PageId(s, static_cast<BlockId>(b)));
  st = pool->stats();
  size_t huge_after = memory::smaps_bytes(base, len, "AnonHugePages");
  size_t resident_after = resident_os_pages(base, len) * 4096;
  std::printf("[vmcache_2m] after %llu evictions: region resident %zu kB, AnonHugePages %zu kB\n",
              static_cast<unsigned long long>(st.evictions), resident_after / 1024, huge_after / 1024);
  EXPECT_GT(st.evictions, 0u);
  EXPECT_LT(huge_after, huge);
  testing::expect_space(*pool, s, 64, stamp_of);
  pool->check_invariants();
}

TEST(VmcachePoolErrors, TooManySpacesForTheAddressSpaceIsAClearError) {
  using Pool = BasicBufferPool<translation::VmcacheTranslation>;
  TempDir dir;
  PoolOptions o = testing::small_options(dir.path(), 16, 16384);
  o.max_blocks_per_space = uint64_t{1} << 32;  // 64 TB of 16 KB pages per space
  auto pool = Pool::open(o);
  std::vector<SpaceId> made;
  Error err(ErrorCode::kIoError, "none");
  for (int i = 0; i < 8; ++i) {
    try {
      made.push_back(pool->create_space("s" + std::to_string(i)));
    } catch (const Error& e) {
      err = e;
      break;
    }
  }
  EXPECT_EQ(err.code(), ErrorCode::kInvalidArgument) << err.what();
  EXPECT_NE(std::string(err.what()).find("such spaces fit"), std::string::npos) << err.what();
  EXPECT_LE(made.size(), 1u);
  // The pool stays usable.
  for (SpaceId s : made) {
    testing::fill_space(*pool, s, 3, stamp_of);
    testing::expect_space(*pool, s, 3, stamp_of);
  }
  EXPECT_EQ(pool->spaces().size(), made.size());
  pool->check_invariants();
}

}  // namespace
}  // namespace calico
