// PoolOptions, PoolStats, SpaceInfo: the buffer pool's parameters and reports, shared by
// every translation variant (include/calico/buffer_pool.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/page_id.h"
#include "calico/detail/tier_config.h"

namespace calico {

namespace io {
class FaultInjector;
}  // namespace io
namespace pool {
class TestPoints;
}  // namespace pool

struct PoolOptions {
  std::string data_dir;                       // created if missing
  size_t page_size = 4096;                    // 4096, 8192 or 16384
  size_t pool_bytes = size_t{256} << 20;      // frames = pool_bytes / page_size
  // Translation array capacity per space. Each space reserves 8 bytes of address space per
  // block (32 GB at 2^32) and keeps it until the pool closes, also after a drop (spaces are
  // type-stable, src/pool/README.md), so one pool can create about 128 TB / (8 B x this)
  // spaces over its lifetime: ~3,900 at 2^32, ~1M at 2^22 (16 GB of data at 4 KB pages).
  uint64_t max_blocks_per_space = uint64_t{1} << 32;
  uint32_t eviction_batch = 64;               // victims per eviction round (1..1024)
  bool huge_pages = true;                     // MADV_HUGEPAGE on the frame arena
  bool prefault_frames = true;                // touch the arena at open
  bool direct_io = true;                      // O_DIRECT (falls back when unsupported)
  unsigned async_depth = 256;                 // prefetch reads in flight (1..4096)
  // How long a caller that finds every frame pinned, latched or loading waits for one to be
  // released before it gets kPoolFull (1 .. 3,600,000 ms). Pins are usually short; a
  // workload that holds many pins on a small pool (or runs under a sanitizer) may want more.
  uint32_t pool_full_wait_ms = 200;
  // A second frame tier (src/pool/features/tiering.h, docs/results/tiers.md). pool_bytes is then
  // the fast tier (tier 0); far_tier.frames frames form tier 1, placed and charged by the
  // tier's kind (local, emulated remote NUMA / CXL, or a NUMA node). Off when frames == 0
  // (the default). far_tier.page_size is ignored (the pool's is used). Only tiered
  // translations take a far tier (translation::Tiered: array_tiered, vmcache_n); the others refuse
  // it at open.
  memory::tiers::TierConfig far_tier;  // frames = 0: no far tier
  // Probability that an access finding its page in the far tier promotes it into the fast
  // tier: reads (optimistic, shared pins) and writes (exclusive pins). The vmcache^n paper
  // (after Spitfire) draws per access too and gives no values; these are tunable.
  double promote_on_read = 0.125;
  double promote_on_write = 0.25;
  // Cache lines charged to an access that finds its page in an emulated far tier (the pool
  // cannot see what the caller reads): 8 ~ a binary search over a 4 KB page plus its header.
  uint32_t far_lines_per_access = 8;
  // Migration batches of policies that batch (kBatchedMigration: vmcache_n,
  // translation/vmcache_n.h), after vmcache^n ([vmcache^n] 2.3 and 4):
  // fast pages demoted per round when the fast tier fills, and far pages evicted to disk per
  // round (512); far pages queued for promotion, then migrated together by the thread that
  // queues the last one (64). Each round takes at most the tier's frames. Calico tiers
  // (array_tiered) demotes eviction_batch pages per round and promotes one page per access.
  uint32_t demotion_batch = 512;   // 1 .. 65536
  uint32_t promotion_batch = 64;   // 1 .. 4096
  // Sparse groups (translation array_sparse only, src/translation/array/sparse_array.h): a group of
  // 512 entries (one 4 KB page of the array) left with at most sparse_group_at resident
  // pages by an eviction moves them to a side table and is punched; a sparse group whose
  // count has reached dense_group_at when a fault comes moves back. 1 <= sparse_group_at <
  // dense_group_at <= 512. The defaults keep a sparse group below the page it replaces
  // (about 50 bytes per side entry) and apart by 2x, so that groups do not flip constantly.
  uint32_t sparse_group_at = 32;
  uint32_t dense_group_at = 64;
  io::FaultInjector* fault_injector = nullptr;  // tests only
  pool::TestPoints* test_points = nullptr;      // tests only (pool/test_points.h)
};

// One frame tier's share of PoolStats (tier 0: the fast frames, all of them without a far
// tier; tier 1: the far tier).
struct PoolTierStats {
  uint64_t frames = 0;
  uint64_t resident_pages = 0;
  uint64_t hits = 0;       // accesses that found their page resident in this tier
  uint64_t evictions = 0;  // pages that left this tier for disk (written back if dirty)
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
  // Frame hints (pools whose translation has kFrameHints, e.g. lipah; 0 for the others):
  uint64_t hint_hits = 0;     // hinted accesses that went straight to the hinted frame
  uint64_t hint_misses = 0;   // hinted accesses that fell back to the translation
  uint64_t hint_repairs = 0;  // stale hints rewritten (repair_hint)
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
  // Tiered memory (PoolOptions::far_tier); promotions..migration_wait_ns are 0 without it.
  PoolTierStats tier[2];
  uint64_t promotions = 0;        // pages copied from the far tier into the fast tier
  uint64_t demotions = 0;         // pages copied from the fast tier into the far tier
  uint64_t migration_bytes = 0;   // bytes copied by promotions and demotions
  uint64_t migration_wait_ns = 0; // time migrations waited for the far tier's bandwidth
  uint64_t migration_ns = 0;      // time spent moving pages between tiers: copies (waits
                                  // included), source discards (vmcache_n), publishing
  uint64_t promotion_batches = 0; // batched promotions run (vmcache_n; 0 for the others)
  // Where batched migration's time goes (vmcache_n; 0 for the others), parts of migration_ns:
  uint64_t migration_fault_ns = 0;   // first touch of each destination page: the kernel backs
                                     // it (page fault, zero fill)
  uint64_t migration_copy_ns = 0;    // the copies, bandwidth waits included
  uint64_t migration_discard_ns = 0; // MADV_DONTNEED of the sources
  // Sparse groups (translation array_sparse; 0 for the others): groups whose entries are in
  // the side table now; moves to it and back; moves refused because a page of the group was
  // latched, pinned or loading, or a fault was in flight in it; the side table's allocated
  // bytes (included in translation_private_bytes).
  uint64_t sparse_groups = 0;
  uint64_t sparse_moves = 0;
  uint64_t dense_moves = 0;
  uint64_t refused_group_moves = 0;
  size_t side_table_bytes = 0;
};

struct SpaceInfo {
  SpaceId id;
  std::string name;
  uint64_t blocks;
};

}  // namespace calico
