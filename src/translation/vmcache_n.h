// VmcacheNTranslation ("vmcache_n"): vmcache^n ([vmcache^n], sections 2-3)
// in user space, as a tiered pool policy (docs/results/tiers.md; the pool side is pool/features/tiering.h and
// pool/features/tier_moves.h; docs/results/tiers.md, "vmcache^n in user space", says what is faithful).
//
// Like vmcache (translation/vmcache.h: 4 KB OS pages, pages in place, one state word per
// block), but each space reserves TWO data regions of the space's capacity, one per memory
// tier. A resident page holds a frame token of the pool (kPagesInPlace: frames are only a
// budget); tokens 1..F are the fast tier's, F+1.. the far tier's (BasicBufferPool::
// in_far_tier), and the page's bytes are at
//     region[tier of its token] + block * page_size.
// So page_data(space, pid, frame) picks the region by the token's tier: the one branch that
// vmcache^n pays in user space. With the kernel's move_pages (or mbind MPOL_MF_MOVE) on a
// machine with a second memory node, the page's virtual address would not change at all:
// the kernel would swap the physical frame behind it and rewrite the PTE. This machine has
// one NUMA node, so the far tier is emulated and the physical move is a user-space copy
// between two virtual addresses.
//
// Migration (the pool's move primitive for this policy, pool/features/promotion.h and
// pool/features/tier_moves.h): under the page's exclusive latch, copy the page from its source-region
// address to its destination-region address through the far tier's copy() (so the emulated
// bandwidth throttle charges both tiered designs alike), then madvise(MADV_DONTNEED) the
// source page: the standard-syscall form of move_pages (the copy is the kernel's
// migrate_folio, the discard its freeing of the old frame and the PTE change; a TLB
// shootdown per discarded range, as an unbatched move_pages). There is no move_pages2 here
// (it is a kernel patch), so its knobs (migration mode, nr_max_batched_migration) do not
// exist; batches coalesce adjacent source pages into one madvise. The destination's first
// touch (the copy) allocates its memory in the kernel, as move_pages allocates on the target
// node. Faults, allocations and prefetches read into the fast region (the paper's Rr = 1
// for loads, which its experiments use).
//
// Readers never crash, and optimistic readers stay correct across a move, by the argument
// of vmcache.h ("Readers never crash") and of Calico tiers (pool/features/tier_moves.h): both regions
// stay mapped while the pool lives; a reader holding {old token, v} reads the old region's
// address, which after the discard reads as zeros (or as contents a later move wrote there);
// the entry now shows another token, and a token's version seed only grows (entry.h,
// "Version ABA"), so that reader's validation fails. The discard happens while the page is
// still latched, before its new entry is published: a later move back into the source region
// can never be wiped by a late discard.
//
// Per-tier resident sets and clocks (paper 2.3): the frame tokens give them. The fast tier's
// resident set is the pages holding tokens 1..F, walked by the pool's clock_; the far tier's
// is tokens F+1.., walked by FarTier::clock. (vmcache^n keeps one open-addressing hash table
// of PIDs per tier; a token's meta_[f].owner is that table's slot.)
//
// Batching (paper 2.3 and 4): this policy declares kBatchedMigration, so the pool
//  - demotes PoolOptions::tiers.demotion_batch (512) fast pages per round when the fast tier
//    fills, and evicts far pages to disk in rounds of the same size;
//  - queues a far page whose access draws promotion (promote_on_read / promote_on_write),
//    without waiting, and when PoolOptions::tiers.promotion_batch (64) are queued the thread that
//    queued the last one migrates them together (pool/features/tier_moves.h, promote_batch).
// Calico tiers (array_tiered) keeps eviction_batch-sized demotions and promotes one page at
// a time on the access.
//
// Address space: twice vmcache's data reservation per space (2 x capacity x page_size);
// vmcache.h's figures per space halve (at 2^20 blocks of 4 KB, 8 GB per space).
// With a NUMA far tier (TierConfig::numa), the far region of each space is bound to its node
// with mbind at space creation, as the pool binds the frame arena of array_tiered.
//
// Thread safety: as VmcacheTable; page() and discard() need no lock (the pool discards
// with the page's exclusive latch held).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calico/page_id.h"
#include "calico/options.h"
#include "memory/tiers/numa_binding.h"
#include "translation/entry.h"
#include "translation/vmcache.h"

namespace calico::translation {

class VmcacheNTable {
 public:
  static constexpr int kTiers = 2;

  // Errors: those of VmcacheTable (kInvalidArgument), and of bind_to_node for a NUMA far tier.
  VmcacheNTable(uint64_t capacity, const PoolOptions& options)
      : tiers_{VmcacheTable(capacity, options.page_size, OsPages::kSmall),
               VmcacheTable(capacity, options.page_size, OsPages::kSmall)} {
    if (options.tiers.far.frames > 0 && options.tiers.far.kind == memory::tiers::TierKind::kNuma) {
      memory::tiers::bind_to_node(tiers_[1].data(), capacity * options.page_size, options.tiers.far.numa_node);
    }
  }
  VmcacheNTable(const VmcacheNTable&) = delete;
  VmcacheNTable& operator=(const VmcacheNTable&) = delete;

  // The state words are tier 0's array (tier 1's is reserved and never touched).
  Entry& entry(BlockId block) const { return tiers_[0].entry(block); }
  Entry* entries() const { return tiers_[0].entries(); }
  uint64_t capacity() const { return tiers_[0].capacity(); }
  // The page's address while it holds a token of `tier` (0 fast, 1 far).
  std::byte* page(BlockId block, int tier) const { return tiers_[tier].page(block); }

  // Before a fault, prefetch or allocation (they load into the fast tier): tier 0's chunk.
  void acquire_ref(BlockId block) const { tiers_[0].acquire_ref(block); }
  // Before a move writes the page into `tier`'s region: that region's chunk.
  void acquire_ref(BlockId block, int tier) const { tiers_[tier].acquire_ref(block); }
  bool release_ref(BlockId) const { return false; }

  // MADV_DONTNEED of pages [block, block + count) of `tier`'s region.
  // Pre: none of them is resident in that tier (their latches are held by the caller).
  void discard(BlockId block, int tier, uint32_t count = 1) { tiers_[tier].discard_range(block, count); }

  void reset() {
    tiers_[0].reset();
    tiers_[1].reset();
  }

  // Translation memory: the state words and the page tables of both regions.
  size_t private_bytes(uint64_t limit_blocks) const {
    return tiers_[0].private_bytes(limit_blocks) + tiers_[1].private_bytes(limit_blocks);
  }
  size_t mincore_bytes(uint64_t limit_blocks) const {
    return tiers_[0].mincore_bytes(limit_blocks) + tiers_[1].mincore_bytes(limit_blocks);
  }
  size_t reserved_bytes() const { return tiers_[0].reserved_bytes() + tiers_[1].reserved_bytes(); }
  // Tests and reports: the resident bytes of the first `blocks` pages of `tier`'s region.
  size_t data_resident_bytes(uint64_t blocks, int tier) const { return tiers_[tier].data_resident_bytes(blocks); }

 private:
  VmcacheTable tiers_[kTiers];
};

struct VmcacheNTranslation {
  static constexpr std::string_view kName = "vmcache_n";
  using Table = VmcacheNTable;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = true;
  static constexpr bool kDirect = false;
  static constexpr bool kTiered = true;           // takes PoolOptions::tiers.far (pool/features/tiering.h)
  static constexpr bool kBatchedMigration = true;  // demotion_batch / promotion_batch (above)
};

}  // namespace calico::translation
