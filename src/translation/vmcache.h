// VmcacheTranslation / Vmcache2mTranslation: vmcache's translation (Leis et al., SIGMOD'23;
// [Calico] section 2 and Tables 2-4; [vmcache^n] section 2) as pool
// policies. Each space reserves a virtual data region the size of the space; page `block`
// lives at region + block * page_size for its whole life, so the CPU's page table does the
// translation, and a dense array of page state words (entry.h), indexed by block, carries
// the latch, version and CLOCK mark. Eviction returns the page's memory with
// madvise(MADV_DONTNEED); a fault reads the page straight into its address with O_DIRECT
// (the kernel allocates the memory during the read).
//
//   vmcache      4 KB OS pages (MADV_NOHUGEPAGE on the data region)
//   vmcache_2m   MADV_HUGEPAGE on the data region (transparent huge pages)
//
// Standard system calls only: vmcache's exmap kernel module (batched, shootdown-free
// eviction) does not exist here, so this is the paper's "vmcache without exmap" form.
//
// Differences from vmcache's code, and why:
//  - State words are Calico's entry (frame 32 | version 24 | state 8, all-zero = evicted)
//    rather than vmcache's {state 8 | version 56} with Evicted = 255: the pool is shared by
//    every translation. vmcache initialises every word to Evicted, so its array is resident
//    for the whole data size from the start; here zero means evicted, so untouched words cost
//    nothing. Touched words are never returned (no hole punching: the array is dense,
//    acquire_ref/release_ref return no translation memory).
//  - Frames are only a budget of tokens (pool: kPagesInPlace): a resident page holds one,
//    CLOCK walks them, the frame arena is never touched. vmcache counts resident pages.
//
// Per space (VmcacheTable):
//   states  capacity x 8 bytes, reserved with MAP_NORESERVE, lazily backed (VirtualRegion)
//   data    capacity x page_size bytes, 2 MB-aligned inside a MAP_NORESERVE reservation with
//           at least 4 KB of slack on each side (so the 2 MB variant's region is a mapping of
//           its own and smaps measures it alone)
//   touched one bit per 2 MB chunk of data: populated since the last reset (page tables)
//
// Address space: a space reserves capacity x (page_size + 8) bytes + 4 MB, kept until the
// pool closes (spaces are type-stable, pool/README.md), out of the process's 128 TB (47-bit)
// user address space. With max_blocks_per_space = 2^32 that is 16 TB per space at 4 KB pages
// (at most 7 spaces per pool lifetime, fewer with other large mappings), 32 TB at 8 KB (3),
// 64 TB at 16 KB (1); at 2^22 blocks of 4 KB, 16 GB (about 8,000); the tests' 2^20, 4 GB
// (about 32,000). When the reservation fails, create_space/open report kInvalidArgument
// naming these numbers. (ThreadSanitizer and AddressSanitizer builds have far less room.)
//
// Readers never crash: the data region stays mapped while the pool lives (reset() is
// MADV_DONTNEED, never munmap). An optimistic reader that reads a page just discarded reads
// zeros (the kernel maps its zero page on the read fault, which needs no memory), or the
// next contents read into that address; either way its validation then fails, because the
// evictor zeroed the entry and the page comes back with a different frame or a newer version
// (entry.h, "Version ABA"). The pool never poisons these pages (eviction.h skips it for
// kPagesInPlace) and discards a victim while it is still latched, so a fault that reloads the
// page cannot be wiped by a late discard. Writes into the region happen only under the
// exclusive latch (allocation's zeroing, writers) or by the kernel's O_DIRECT read of a
// loading page; memory is taken at that moment (MAP_NORESERVE: nothing is committed ahead),
// so running out of memory is the kernel's OOM handling, as for any anonymous memory.
// A read that fails (I/O error, checksum) leaves its page's memory in place until the page
// is next loaded and evicted or the space is dropped (the pool's failure paths do not
// discard); the contents are never used.
//
// The 2 MB problem (measured on Linux 6.18, THP "madvise" mode, defrag "madvise",
// khugepaged max_ptes_none 511; tests/translation/vmcache_test.cc prints the numbers):
//  - The first touch of an empty 2 MB chunk (an O_DIRECT read, or zeroing an allocated page)
//    takes a whole 2 MB huge page. A pool of 32 frames reading one page in each of 16 chunks
//    held 16 pages and 32768 kB of memory (AnonHugePages 32768 kB): the frame budget bounds
//    resident pages, not memory, which can be 512x larger.
//  - Evicting one 4 KB page (MADV_DONTNEED of 4 KB) splits the huge page: the chunk becomes
//    512 PTE-mapped 4 KB pages, only the evicted one is freed (8 MB of huge pages, one page
//    discarded in 2 chunks: AnonHugePages 8192 -> 4096 kB, Rss 8192 -> 8184 kB). The other
//    pages stay until evicted themselves; the chunk keeps its PTE table, so later faults
//    there take 4 KB pages. After 56 evictions the pool above held 32544 kB, no huge page.
//  - khugepaged then collapses such chunks back into huge pages, filling the evicted holes
//    with zeros: 16 chunks with one 4 KB page left each (Rss 64 kB) were 32768 kB of huge
//    pages again 30-40 s later; the next eviction in a chunk splits it again.
// So vmcache_2m evicts at page granularity (correct, since the state words and the pool do
// not care how the kernel maps the region), but once it evicts it loses its huge pages and
// its memory is not bounded by the pool size. It is meant for in-memory runs, as in
// [Calico]: Table 2's vmcache(2MB) is fully resident, and section 6 runs vmcache with 4 KB
// pages "due to the eviction granularity". Use `vmcache` for larger-than-memory runs.
//
// Translation memory (private_bytes/mincore_bytes) = the state array's resident pages
// (pagemap private pages, resp. mincore) + the page tables that map the data region:
//   4 KB x (touched 2 MB chunks + touched 1 GB ranges + touched 512 GB ranges)
// i.e. one PTE table per 2 MB chunk, one PMD table per 1 GB, one PUD table per 512 GB of
// virtual address (the top level is the process's anyway). "Touched" = populated since the
// last reset(), tracked by acquire_ref() (called before every fault, prefetch and allocation),
// because the kernel keeps a chunk's PTE table after its pages are discarded one by one: only
// a MADV_DONTNEED spanning the whole 2 MB frees it (CONFIG_PT_RECLAIM), and a transparent
// huge page also has one PTE table deposited for its later split (x86-64). Measured: 512
// pages one per 2 MB cost VmPTE +2052 kB, still +2052 kB after each page's DONTNEED, +4 kB
// after a DONTNEED of the whole range; 64 MB of huge pages, VmPTE +128 kB. The entry-level
// figure (8 bytes per present 4 KB PTE, 8 per huge PMD) is a lower bound that ignores this
// 4 KB granularity; page_tables() reports it too. Kernels without CONFIG_PT_RECLAIM (before
// 6.14) free page tables only at munmap, so there the figure undercounts after a reset().
//
// Thread safety: states are atomics (entry.h protocols); touched bits are set with fetch_or;
// page() and discard() need no lock (the pool calls discard with the page's exclusive latch
// held). reset() requires that no thread loads or writes a page concurrently (the pool's
// drop_space guarantees it); concurrent readers of stale pointers see zeros.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calico/page_id.h"
#include "calico/options.h"
#include "memory/virtual_region.h"
#include "translation/entry.h"

namespace calico::translation {

inline constexpr size_t kVmcacheChunkBytes = size_t{2} << 20;  // one PTE table maps 2 MB

enum class OsPages { kSmall, kHuge };

// What the page tables that map a space's data region cost (see the header comment).
struct PageTableUse {
  uint64_t pte_tables = 0;      // touched 2 MB chunks
  uint64_t pmd_tables = 0;      // 1 GB ranges holding a touched chunk
  uint64_t pud_tables = 0;      // 512 GB ranges holding a touched chunk
  uint64_t present_pages = 0;   // 4 KB pages mincore reports present (also zero-page maps)
  uint64_t huge_pages = 0;      // 2 MB pages mapping the region (smaps AnonHugePages)
  size_t table_bytes() const { return (pte_tables + pmd_tables + pud_tables) * 4096; }
  // 8 bytes per PTE of a present 4 KB page and per PMD of a huge page: the lower bound.
  size_t entry_bytes() const { return (present_pages - huge_pages * 512 + huge_pages) * 8; }
};

class VmcacheTable {
 public:
  // Reserves room for `capacity` blocks (1 .. 2^32) of page_size bytes (4, 8 or 16 KB).
  // Errors: kInvalidArgument (bad capacity or page size; the address space cannot be
  // reserved: the message says how many such spaces fit).
  VmcacheTable(uint64_t capacity, size_t page_size, OsPages os_pages);
  VmcacheTable(const VmcacheTable&) = delete;
  VmcacheTable& operator=(const VmcacheTable&) = delete;

  Entry& entry(BlockId block) const { return states_[block]; }
  Entry* entries() const { return states_; }
  uint64_t capacity() const { return capacity_; }
  // The page's fixed address: the translation is the CPU's page table.
  std::byte* page(BlockId block) const { return data_ + static_cast<size_t>(block) * page_size_; }

  // Called before a page's entry leaves the evicted state (fault, prefetch, allocation):
  // marks its 2 MB chunk as holding a page table. Returns no memory (the state array is dense).
  void acquire_ref(BlockId block) const;
  bool release_ref(BlockId) const { return false; }

  // MADV_DONTNEED of the page: its memory goes back to the OS and it reads as zeros.
  // Pre: the page is not resident (its exclusive latch is held by the evictor).
  void discard(BlockId block);
  // The same for pages [block, block + count), in one madvise (vmcache_n's batched moves).
  void discard_range(BlockId block, uint32_t count);

  // Every state word zero, every data page and the page tables returned (one MADV_DONTNEED
  // of the whole region frees its page tables too). Pre: see the header comment.
  void reset();

  // Translation memory for blocks [0, limit_blocks): states + page tables (header comment).
  size_t private_bytes(uint64_t limit_blocks) const;
  size_t mincore_bytes(uint64_t limit_blocks) const;
  // Address space reserved: states, data (with its alignment slack) and touched bits.
  size_t reserved_bytes() const;

  PageTableUse page_tables(uint64_t limit_blocks) const;
  // The data region of the first `blocks` pages (tests and reports): its start, and what
  // mincore / smaps say of it.
  std::byte* data() const { return data_; }
  size_t data_resident_bytes(uint64_t blocks) const;
  size_t data_huge_page_bytes() const;
  size_t page_size() const { return page_size_; }

 private:
  std::atomic<uint64_t>& touched_word(uint64_t chunk) const { return touched_[chunk / 64]; }
  // The table counts of page_tables(), from the touched bits only (no system call).
  PageTableUse touched_tables(uint64_t limit_blocks) const;
  uint64_t chunks_of(uint64_t blocks) const {
    return (blocks * page_size_ + kVmcacheChunkBytes - 1) / kVmcacheChunkBytes;
  }

  uint64_t capacity_;
  size_t page_size_;
  size_t data_offset_;  // data_ - data_region_.data()
  size_t data_bytes_;   // capacity x page_size
  memory::VirtualRegion state_region_;
  memory::VirtualRegion data_region_;
  memory::VirtualRegion touched_region_;
  Entry* states_;
  std::byte* data_;
  std::atomic<uint64_t>* touched_;
};

// The Table types of the two policies (BasicSpace constructs Table(capacity, options)).
template <OsPages kOsPages>
class BasicVmcacheTable : public VmcacheTable {
 public:
  BasicVmcacheTable(uint64_t capacity, const PoolOptions& options)
      : VmcacheTable(capacity, options.page_size, kOsPages) {}
};

struct VmcacheTranslation {
  static constexpr std::string_view kName = "vmcache";
  using Table = BasicVmcacheTable<OsPages::kSmall>;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = true;
  static constexpr bool kDirect = false;
};

struct Vmcache2mTranslation {
  static constexpr std::string_view kName = "vmcache_2m";
  using Table = BasicVmcacheTable<OsPages::kHuge>;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = true;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
