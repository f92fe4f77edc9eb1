// PoolStats and SpaceInfo: what the buffer pool reports (BasicBufferPool::stats(), spaces()).
// The fields at the top apply to every translation; the sub-structs are zero for the
// translations without the feature:
//   hints          frame hints (translation::kHasFrameHints: lipah, array_hinted)
//   migration      moves between frame tiers (a far tier, PoolOptions::tiers)
//   sparse_groups  sparse groups (array_sparse)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/page_id.h"

namespace calico {

// One frame tier's share of PoolStats (tier 0: the fast frames, all of them without a far
// tier; tier 1: the far tier).
struct PoolTierStats {
  uint64_t frames = 0;
  uint64_t resident_pages = 0;
  uint64_t hits = 0;       // accesses that found their page resident in this tier
  uint64_t evictions = 0;  // pages that left this tier for disk (written back if dirty)
};

// Frame hints (translations with translation::kHasFrameHints: lipah, array_hinted).
struct HintStats {
  uint64_t hits = 0;     // hinted accesses that went straight to the hinted frame
  uint64_t misses = 0;   // hinted accesses that fell back to the translation
  uint64_t repairs = 0;  // stale hints rewritten (repair_hint)
};

// Moves between the frame tiers (PoolOptions::tiers; all 0 without a far tier).
struct MigrationStats {
  uint64_t promotions = 0;  // pages copied from the far tier into the fast tier
  uint64_t demotions = 0;   // pages copied from the fast tier into the far tier
  uint64_t bytes = 0;       // bytes copied by promotions and demotions
  uint64_t wait_ns = 0;     // time migrations waited for the far tier's bandwidth
  uint64_t ns = 0;          // time spent moving pages between tiers: copies (waits
                            // included), source discards (vmcache_n), publishing
  uint64_t promotion_batches = 0;  // batched promotions run (vmcache_n; 0 for the others)
  // Where batched migration's time goes (vmcache_n; 0 for the others), parts of ns:
  uint64_t fault_ns = 0;    // first touch of each destination page: the kernel backs it
                            // (page fault, zero fill)
  uint64_t copy_ns = 0;     // the copies, bandwidth waits included
  uint64_t discard_ns = 0;  // MADV_DONTNEED of the sources
};

// Sparse groups (translation array_sparse; all 0 for the others).
struct SparseGroupStats {
  uint64_t groups = 0;         // groups whose entries are in the side table now
  uint64_t sparse_moves = 0;   // moves of a group to the side table
  uint64_t dense_moves = 0;    // and back to the array
  uint64_t refused_moves = 0;  // moves refused because a page of the group was latched,
                               // pinned or loading, or a fault was in flight in it
  size_t side_table_bytes = 0; // the side table's allocated bytes (included in
                               // translation_private_bytes)
};

struct PoolStats {
  uint64_t accesses = 0;          // page accesses: pins, optimistic attempts (a retry counts),
                                  // through the translation or a valid frame hint
  uint64_t hits = 0;              // accesses that did not read the page themselves
  uint64_t faults = 0;            // pages read synchronously
  uint64_t evictions = 0;
  uint64_t write_backs = 0;       // pages written (eviction and flush)
  uint64_t punches = 0;           // 4 KB pages of translation entries returned to the OS
  uint64_t prefetch_issued = 0;   // asynchronous reads submitted
  uint64_t prefetch_failed = 0;   // asynchronous reads that failed (the page stays evicted)
  // Page reads' time in flight, summed (ns): submission to completion as the pool saw it, for
  // faults and prefetches. Over a wall-clock interval, its growth / the interval = the mean
  // number of reads in flight (the queue depth the device was given).
  uint64_t read_inflight_ns = 0;
  uint64_t optimistic_fallbacks = 0;  // optimistic reads that gave up and pinned
  uint64_t frames = 0;
  uint64_t free_frames = 0;
  uint64_t resident_pages = 0;
  size_t translation_private_bytes = 0;  // pagemap: private pages of arrays and counters
  size_t translation_mincore_bytes = 0;  // mincore: also counts zero-page mappings
  size_t translation_reserved_bytes = 0;  // address space reserved for translation
  size_t frame_bytes = 0;
  size_t frame_huge_page_bytes = 0;   // AnonHugePages of the frame arena (smaps)
  bool direct_io = false;             // every open space file uses O_DIRECT
  uint64_t write_back_failures = 0;   // page writes (eviction, flush) that failed; the page
                                      // stayed dirty in memory and is written again later
  uint64_t sync_failures = 0;         // fdatasync calls of flush() that failed
  uint64_t journal_pages = 0;         // page images saved to the rollback journal
  uint64_t journal_syncs = 0;         // its fdatasyncs (one per write batch that saved any)
  uint64_t flush_generation = 0;      // flushes committed (the catalog's generation)
  // Per frame tier: tier 0 is every frame of a pool without a far tier (PoolOptions::tiers).
  PoolTierStats tier[2];
  HintStats hints;                 // lipah, array_hinted
  MigrationStats migration;        // a far tier
  SparseGroupStats sparse_groups;  // array_sparse
};

struct SpaceInfo {
  SpaceId id;
  std::string name;
  uint64_t blocks;
};

}  // namespace calico
