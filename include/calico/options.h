// PoolOptions: the buffer pool's parameters (include/calico/buffer_pool.h). The fields at the
// top apply to every translation; the sub-structs hold what only some translations or only
// tests use, so that a reader of the common case can skip them:
//   tiers          a second frame tier: translations with translation::Tiered only
//   sparse_groups  sparse groups: array_sparse only
//   testing        fault injection and pause points: tests only
// BasicBufferPool::open checks every field and names the one out of range (kInvalidArgument).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/detail/tier_config.h"

namespace calico {

namespace io {
class FaultInjector;
}  // namespace io
namespace pool {
class TestPoints;
}  // namespace pool

// A second frame tier (src/pool/features/tiering.h, docs/results/tiers.md). pool_bytes is then
// the fast tier (tier 0); far.frames frames form tier 1, placed and charged by the tier's kind
// (local, emulated remote NUMA / CXL, or a NUMA node). Off when far.frames == 0 (the default).
// far.page_size is ignored (the pool's is used). Only tiered translations take a far tier
// (translation::Tiered: array_tiered, vmcache_n); the others refuse it at open.
struct TierOptions {
  memory::tiers::TierConfig far;  // frames = 0: no far tier
  // Probability that an access finding its page in the far tier promotes it into the fast
  // tier: reads (optimistic, shared pins) and writes (exclusive pins). The vmcache^n paper
  // (after Spitfire) draws per access too and gives no values; these are tunable.
  double promote_on_read = 0.125;
  double promote_on_write = 0.25;
  // Cache lines charged to an access that finds its page in an emulated far tier (the pool
  // cannot see what the caller reads): 8 ~ a binary search over a 4 KB page plus its header.
  uint32_t far_lines_per_access = 8;
  // Migration batches of policies that batch (translation::BatchedMigration: vmcache_n,
  // translation/vmcache_n.h), after vmcache^n ([vmcache^n] 2.3 and 4): fast pages demoted per
  // round when the fast tier fills, and far pages evicted to disk per round (512); far pages
  // queued for promotion, then migrated together by the thread that queues the last one (64).
  // Each round takes at most the tier's frames. Calico tiers (array_tiered) demotes
  // eviction_batch pages per round and promotes one page per access.
  uint32_t demotion_batch = 512;   // 1 .. 65536
  uint32_t promotion_batch = 64;   // 1 .. 4096
};

// Sparse groups (translation array_sparse only, src/translation/array/sparse_array.h): a group
// of 512 entries (one 4 KB page of the array) left with at most sparse_at resident pages by an
// eviction moves them to a side table and is punched; a sparse group whose count has reached
// dense_at when a fault comes moves back. 1 <= sparse_at < dense_at <= 512. The defaults keep
// a sparse group below the page it replaces (about 50 bytes per side entry) and apart by 2x,
// so that groups do not flip constantly.
struct SparseGroupOptions {
  uint32_t sparse_at = 32;
  uint32_t dense_at = 64;
};

// Hooks for tests: both null in every other use.
struct TestHooks {
  io::FaultInjector* fault_injector = nullptr;  // io/fault_injector.h
  pool::TestPoints* test_points = nullptr;      // pool/test_points.h
};

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
  // A crash reopens exactly the state of the last flush (src/pool/journal.h): before a page
  // the last flush made durable is first overwritten in place, its image goes to a rollback
  // journal. Off: a crash reopens each page at that flush or later (a multi-page structure
  // may come back torn); for measuring the raw write path.
  bool atomic_flush = true;
  unsigned async_depth = 256;                 // prefetch reads in flight (1..4096)
  // How long a caller that finds every frame pinned, latched or loading waits for one to be
  // released before it gets kPoolFull (1 .. 3,600,000 ms). Pins are usually short; a
  // workload that holds many pins on a small pool (or runs under a sanitizer) may want more.
  uint32_t pool_full_wait_ms = 200;
  TierOptions tiers;                  // translation::Tiered only
  SparseGroupOptions sparse_groups;   // array_sparse only
  TestHooks testing;                  // tests only
};

}  // namespace calico
