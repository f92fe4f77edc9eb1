// FarTier: the pool's second frame tier (docs/results/tiers.md, "Calico tiers"): its memory model, its
// free frames, its CLOCK hand and its counters. BasicBufferPool keeps one when
// PoolOptions::tiers.far.frames > 0 (a null pointer otherwise); the moves are in
// pool/features/tier_moves.h, the rules in pool/README.md ("Tiered memory").
//
// Entry points: FarTier(options, first, last); probability_threshold(); draw_below().
//
// Layout: one frame arena holds both tiers. Frames 1..F are tier 0 (fast; F =
// pool_bytes / page_size), F+1..F+tiers.far.frames are tier 1 (far), placed with the tier's
// place() at open. One arena keeps frame(f) a shift-add with no tier branch on the hot path,
// keeps frame ids global (the entry word is unchanged), and makes "is f far" one compare
// against F.
//
// Invariants:
//  - A resident page lives in exactly one frame, so in exactly one tier.
//  - Faults, allocations and prefetches take fast frames only (the pool's free list holds
//    tier 0); `free` holds tier 1's free frames and is popped only under evict_mutex_
//    (demotion), pushed by promotion (the far frame a page left), far eviction and drop.
//  - `clock` is guarded by evict_mutex_, like the pool's clock_ (which covers tier 0).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "calico/page_id.h"
#include "calico/options.h"
#include "calico/stats.h"
#include "memory/tiers/memory_tier.h"
#include "pool/clock.h"
#include "pool/free_list.h"
#include "pool/thread_random.h"

namespace calico::pool {

// The threshold with which draw_below(threshold) is true with probability p (p in [0, 1];
// validate_options checks it): 0 never, UINT64_MAX always.
inline uint64_t probability_threshold(double p) {
  if (!(p > 0)) return 0;
  if (p >= 1) return UINT64_MAX;
  return static_cast<uint64_t>(p * 18446744073709551616.0);  // p * 2^64 < 2^64
}

// True with probability threshold / 2^64 (always for UINT64_MAX), from thread_random().
inline bool draw_below(uint64_t threshold) {
  if (threshold == UINT64_MAX) return true;
  if (threshold == 0) return false;
  return thread_random() < threshold;
}

struct FarTier {
  // Frames first..last of the pool's arena are the far tier. Pre: validate_options passed.
  // Errors: those of memory::tiers::make_tier (the emulated tier calibrates its spin here).
  FarTier(const PoolOptions& o, FrameId first_frame, FrameId last_frame)
      : tier(memory::tiers::make_tier(config_of(o))),
        first(first_frame),
        last(last_frame),
        free(first_frame, last_frame),
        clock(first_frame, last_frame),
        promote_read(probability_threshold(o.tiers.promote_on_read)),
        promote_write(probability_threshold(o.tiers.promote_on_write)),
        lines_per_access(o.tiers.far_lines_per_access) {}

  static memory::tiers::TierConfig config_of(const PoolOptions& o) {
    memory::tiers::TierConfig c = o.tiers.far;
    c.page_size = o.page_size;
    return c;
  }

  const std::unique_ptr<memory::tiers::MemoryTier> tier;
  const FrameId first;  // = fast frames + 1
  const FrameId last;   // = the arena's last frame
  FreeList free;
  ClockHand clock;
  const uint64_t promote_read;   // draw_below thresholds
  const uint64_t promote_write;
  const uint32_t lines_per_access;
  // Relaxed counters (stats()).
  std::atomic<uint64_t> promotions{0};
  std::atomic<uint64_t> demotions{0};
  std::atomic<uint64_t> evictions[2] = {0, 0};  // pages that left tier i for disk
  std::atomic<uint64_t> migration_ns{0};        // time in moves (copy, discard, publish)
  std::atomic<uint64_t> promotion_batches{0};
  std::atomic<uint64_t> fault_ns{0};    // batched migration's phases (PoolStats::migration.*_ns)
  std::atomic<uint64_t> copy_ns{0};
  std::atomic<uint64_t> discard_ns{0};

  // Batched promotion (BatchedMigration policies): pages whose access drew promotion, at most
  // PoolOptions::tiers.promotion_batch, each once. Guarded by queue_mutex (a leaf lock, held only
  // to push or to take the batch).
  std::mutex queue_mutex;
  std::vector<PageId> queue;
};

}  // namespace calico::pool
