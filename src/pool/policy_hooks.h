// PoolCore's policy hooks: the points where the access paths differ by translation policy,
// one function each, inline. Each compiles to nothing or to a constant for a policy without
// the capability it serves (calico/translation_policy.h), so the array's hit path is the
// array's alone. Grouped by capability:
//   looked-up entries (recycled entries, sparse groups): find_entry_for, existing_entry,
//       owns, forget, acquire_ref_for;
//   pages in place (vmcache) and tiers: page_data, discard_in_place, in_far_tier,
//       free_frame;
//   preferred frames (predictive): predict, promote_on_hit;
//   frame hints (lipah): publish_owner, clear_owner, hinted_entry, owned_by, count_hint.
#pragma once

#include <atomic>

#include "pool/pool_core.h"

namespace calico {

// As entry_for, but a recycling table inserts no entry: nullptr when pid has none (paths
// that never fault, which must not create entries for pages that are not resident).
template <class T>
inline translation::Entry* pool::PoolCore<T>::find_entry_for(PageId pid, Space** space_out) {
  if constexpr (kLookedUpEntries) {
    Resolved r = resolve(pid.space());
    if (pid.block() >= r.capacity) [[unlikely]] throw_out_of_range(pid);
    *space_out = r.space;
    return r.space->table.find(pid.block());
  } else {
    return &entry_for(pid, space_out);
  }
}

// The entry of `block` if it has one, without inserting (recycling tables): for the scans
// of frames (CLOCK, flush, drop), whose owner hint may name a page that just left.
template <class T>
inline translation::Entry* pool::PoolCore<T>::existing_entry(Space* s, BlockId block) {
  if constexpr (kLookedUpEntries) {
    return s->table.find(block);
  } else {
    return &s->table.entry(block);
  }
}

// Recycling tables (entry.h, R4/R5): whether e, reached through pid's lookup in space s,
// belongs to pid now (exact while a latch on e is held); sparse groups: an array word is
// always its block's, a side entry is checked as a recycled one. Always true, and compiled
// away, for the others.
template <class T>
inline bool pool::PoolCore<T>::owns(const Space* s, const translation::Entry& e, PageId pid) {
  if constexpr (kRecyclesEntries) {
    (void)s;
    return translation::owned_by(e, pid.block());
  } else if constexpr (kSparseGroups) {
    return s->table.owns(e, pid.block());
  } else {
    (void)s, (void)e, (void)pid;
    return true;
  }
}

// Recycling tables: delete block's entry if it is zero (entry.h, R2); sparse groups: the
// same for a side entry `e`. Called after every store of 0 into an entry (eviction, drop, a
// failed load) and when a fault gives up before latching, so that the table only holds
// pages in the pool. Nothing for the others.
template <class T>
inline void pool::PoolCore<T>::forget(Space* s, BlockId block, const translation::Entry& e) {
  if constexpr (kRecyclesEntries) {
    (void)e;
    s->table.forget(block);
  } else if constexpr (kSparseGroups) {
    if (s->table.is_side(e)) s->table.forget_side(block);
  } else {
    (void)s, (void)block, (void)e;
  }
}

// The hole-punch reference before a write out of zero into e, pid's entry as looked up.
// Sparse groups: false (no reference held) when e is not in the representation the
// reference covers (the group moved since the lookup): look pid up again.
template <class T>
inline bool pool::PoolCore<T>::acquire_ref_for(Space* s, BlockId block, const translation::Entry& e) {
  if constexpr (kSparseGroups) {
    if (s->table.acquire_ref(block) == s->table.is_side(e)) return true;
    release_ref(s, block);
    return false;
  } else {
    (void)e;
    s->table.acquire_ref(block);
    return true;
  }
}

// The bytes of page `pid` while it is held in frame f.
template <class T>
inline std::byte* pool::PoolCore<T>::page_data(Space* s, PageId pid, FrameId f) const {
  if constexpr (kTieredInPlace) {
    return s->table.page(pid.block(), tier_of(f));  // the one tier branch of vmcache_n
  } else if constexpr (T::kPagesInPlace) {
    return s->table.page(pid.block());
  } else {
    (void)s, (void)pid;
    return frames_.frame(f);
  }
}

// Predictive translations only; compiled out (constant results) for the other policies.
// predict: the page's preferred frame, its first line prefetched before the lookup resolves,
// so that the frame and the bucket load overlap (Listing 3 of the paper).
template <class T>
inline FrameId pool::PoolCore<T>::predict(PageId pid) const {
  if constexpr (translation::Predicting<T>) {
    FrameId f = predictor_.preferred_frame(pid);
    __builtin_prefetch(frames_.frame(f));
    return f;
  } else {
    (void)pid;
    return kInvalidFrame;
  }
}

// A hit on a resident, unlatched page outside its predicted frame: with probability
// 1/kPromoteOneIn try to move it there (try_promote). True when the entry may have changed
// and the caller must reload it.
template <class T>
inline bool pool::PoolCore<T>::promote_on_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
                    FrameId predicted) {
  if constexpr (translation::Predicting<T>) {
    if (w.frame() == predicted || !w.resident() || !w.unlatched()) [[likely]] return false;
    if (!pool::promotion_draw(T::kPromoteOneIn)) [[likely]] return false;
    try_promote(space, pid, e, w, predicted);
    return true;
  } else {
    (void)space, (void)pid, (void)e, (void)w, (void)predicted;
    return false;
  }
}

// Pages in place: returns the memory of pid's page in frame f's tier (pid is latched
// exclusively and no longer there, or leaving).
template <class T>
inline void pool::PoolCore<T>::discard_in_place(Space* s, PageId pid, FrameId f) {
  if constexpr (kTieredInPlace) {
    s->table.discard(pid.block(), tier_of(f));
  } else if constexpr (T::kPagesInPlace) {
    s->table.discard(pid.block());
  } else {
    (void)s, (void)pid, (void)f;
  }
}

// --- tiered memory (pool/features/tiering.h, pool/features/tier_moves.h) ---
// Whether frame f is in the far tier. False for every frame without a far tier (fast_last_
// is then the last frame) and compiled away for policies that cannot take one.
template <class T>
inline bool pool::PoolCore<T>::in_far_tier(FrameId f) const {
  if constexpr (kTierable) {
    return f > fast_last_;
  } else {
    (void)f;
    return false;
  }
}

// Gives a frame that holds no page back to its tier's free list.
template <class T>
inline void pool::PoolCore<T>::free_frame(FrameId f) {
  if (in_far_tier(f)) {
    far_->free.push(f);
  } else {
    free_list_.push(f);
  }
}

// Frame ownership changes (pool/README.md, "Frame ownership"). publish_owner: after the
// page is in frame f and before its entry is published; clear_owner: under the page's
// exclusive latch, before its entry is zeroed. With frame hints they also set / clear the
// frame's entry pointer (nothing else for other policies).
template <class T>
inline void pool::PoolCore<T>::publish_owner(FrameId f, PageId pid, translation::Entry& e) {
  if constexpr (kFrameHints) frame_entries_[f].store(&e, std::memory_order_release);
  meta_[f].owner.store(pid.raw, std::memory_order_release);
}

template <class T>
inline void pool::PoolCore<T>::clear_owner(FrameId f) {
  meta_[f].owner.store(0, std::memory_order_release);
  if constexpr (kFrameHints) frame_entries_[f].store(nullptr, std::memory_order_release);
}

// Frame hints: the entry pointer of frame f if f is a frame owned by pid (step (1) and (2)
// of the proof at read_optimistic_hinted), else nullptr.
template <class T>
inline translation::Entry* pool::PoolCore<T>::hinted_entry(PageId pid, FrameId f) const
  requires translation::kHasFrameHints<T>  // not kFrameHints: clang 14 (fuzz build)
{
  if (f - 1 >= frames_.num_frames()) return nullptr;  // kInvalidFrame (wraps) or past the end
  if (!owned_by(f, pid)) return nullptr;
  return frame_entries_[f].load(std::memory_order_acquire);
}

template <class T>
inline bool pool::PoolCore<T>::owned_by(FrameId f, PageId pid) const {
  return meta_[f].owner.load(std::memory_order_acquire) == pid.raw;
}

template <class T>
inline void pool::PoolCore<T>::count_hint(bool hit) {
  std::atomic<uint64_t>& c = hit ? thread_counter()->hint_hits : thread_counter()->hint_misses;
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace calico
