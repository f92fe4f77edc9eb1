// pool::PoolCore<T> page moves for predictive translations ([PrediCache],
// sections 3.2 and 5.1): promotion of a page into its preferred frame, demoting the page
// that holds that frame when needed. Compiled only for policies that satisfy
// translation::Predicting (the members are constrained); included by definitions.h.
//
// When: promote_on_hit() (buffer_pool.h) sees a resident, unlatched page outside its
// preferred frame and draws 1/kPromoteOneIn (32). try_promote() then looks at the preferred
// frame's owner: free -> promote; held by page Q -> one more draw of 1/16 (so 1/512 of
// such hits, kDemoteOneIn) to demote Q into a free frame and promote.
//
// Protocol of a move (try_promote), every step a try that gives up rather than waits, so a
// mover can hold pins on other pages and never deadlocks:
//   1. try flush_mutex_: no flush runs during a move (a page moving to a frame behind the
//      flush's frame scan would be missed), and moves are serialised with each other.
//   2. try the space's fault_latch shared and check `alive` (and Q's space's, if other): a
//      move installs a page in a frame, like a fault; drop_space waits for it.
//   3. promote: take the preferred frame from the free list (FreeList::take), then latch the
//      page exclusively by CAS from the word seen on the hit.
//      demote: confirm Q's entry points at the frame, pop a spare free frame, latch Q, then
//      the page (both CAS; on any failure everything taken is given back unchanged).
//   4. move_page(): copy the page under its exclusive latch, carry the dirty bit, set the
//      new frame's owner, publish {new frame, new frame's seed, unlocked}.
//   5. release_moved_frame(): the old frame's seed becomes the page's version + 1 (entry.h,
//      "Version ABA": versions shown for one frame only grow), its owner and dirty bit are
//      cleared, it is poisoned (CHECKS_LEVEL >= 2) and given to the free list. For a
//      demotion the freed frame is the target itself: its seed is set before the promoted
//      page is published there.
// Optimistic readers of a moved page hold {old frame, v}; the entry now shows another
// frame, so their validation fails. Pins cannot exist (the latch was taken from unlatched).
// CLOCK sees owners set before and cleared after the entry points at a frame, and confirms
// through the entry, as for faults and evictions.
#pragma once

#include <bit>

#include "pool/core_definitions.h"

namespace calico {

template <class T>
bool pool::PoolCore<T>::try_promote(Space* space, PageId pid, translation::Entry& e,
                                     translation::EntryWord seen, FrameId target)
  requires translation::Predicting<T>
{
  static_assert(std::has_single_bit(T::kPromoteOneIn) && std::has_single_bit(T::kDemoteOneIn) &&
                T::kDemoteOneIn > T::kPromoteOneIn);
  using translation::EntryWord;
  CALICO_DCHECK(target != kInvalidFrame && target <= frames_.num_frames());
  CALICO_DCHECK(seen.resident() && seen.frame() != target);
  PageId victim(meta_[target].owner.load(std::memory_order_acquire));
  if (victim == pid) return false;  // moved there by another thread meanwhile
  if (victim.valid() && !pool::promotion_draw(T::kDemoteOneIn / T::kPromoteOneIn)) return false;

  std::unique_lock flush_lock(flush_mutex_, std::try_to_lock);
  if (!flush_lock.owns_lock()) return false;
  std::shared_lock fault_lock(space->fault_latch, std::try_to_lock);
  if (!fault_lock.owns_lock() || !space->alive.load(std::memory_order_acquire)) return false;

  if (!victim.valid()) {
    // Promotion into a free frame.
    if (!free_list_.take(target)) return false;  // a loader took it meanwhile
    if (!translation::try_lock_exclusive(e, seen)) {
      free_list_.push(target);
      return false;
    }
    EntryWord held = seen.with_state(translation::kExclusive);
    move_page(space, pid, e, held, target);
    release_moved_frame(held);
    moves_.promotions.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Demotion of the victim into a spare frame, then promotion into the freed target.
  Space* vspace = victim.space() == pid.space() ? space : directory_.lookup(victim.space());
  if (vspace == nullptr) return false;
  std::shared_lock victim_fault_lock(vspace->fault_latch, std::defer_lock);
  if (vspace != space && (!victim_fault_lock.try_lock() || !vspace->alive.load(std::memory_order_acquire))) {
    return false;
  }
  translation::Entry& ve = vspace->table.entry(victim.block());
  EntryWord vseen = translation::load(ve);
  if (vseen.frame() != target || !vseen.unlatched()) return false;  // moved, evicted, or in use
  FrameId spare = free_list_.pop();
  if (spare == kInvalidFrame) return false;
  if (!translation::try_lock_exclusive(ve, vseen)) {
    free_list_.push(spare);
    return false;
  }
  EntryWord vheld = vseen.with_state(translation::kExclusive);
  if (!translation::try_lock_exclusive(e, seen)) {
    translation::unlock_exclusive(ve, vheld, /*bump_version=*/false);  // unchanged
    free_list_.push(spare);
    return false;
  }
  EntryWord held = seen.with_state(translation::kExclusive);
  move_page(vspace, victim, ve, vheld, spare);
  // The victim left the target with version vheld: the promoted page starts above it there.
  meta_[target].version_seed.store(vheld.version() + 1, std::memory_order_relaxed);
  move_page(space, pid, e, held, target);
  release_moved_frame(held);
  moves_.demotions.fetch_add(1, std::memory_order_relaxed);
  moves_.promotions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The move primitive, shared with tier migration (pool/features/tier_moves.h).
template <class T>
void pool::PoolCore<T>::move_page(Space* s, PageId pid, translation::Entry& e, translation::EntryWord held,
                                   FrameId to) {
  const FrameId from = held.frame();
  CALICO_DCHECK(held.state() == translation::kExclusive && translation::load(e).raw == held.raw);
  // `to` is free (owner 0), or, in try_promote's demotion, the frame its victim just left.
  CALICO_DCHECK(from != to && meta_[from].owner.load() == pid.raw);
  copy_page(s, pid, from, to);
  // Pages in place: the source goes while the page is latched, so that a later move back into
  // that region cannot be wiped by it (translation/vmcache_n.h).
  if constexpr (T::kPagesInPlace) discard_in_place(s, pid, from);
  publish_moved(pid, e, held, to);
}

template <class T>
void pool::PoolCore<T>::copy_page(Space* s, PageId pid, FrameId from, FrameId to) {
  if constexpr (kTieredInPlace) s->table.acquire_ref(pid.block(), tier_of(to));
  std::byte* dst = page_data(s, pid, to);
  const std::byte* src = page_data(s, pid, from);
  if (in_far_tier(from) || in_far_tier(to)) {
    far_->tier->copy(dst, src, options_.page_size);  // may wait for bandwidth
  } else {
    std::memcpy(dst, src, options_.page_size);
  }
}

template <class T>
void pool::PoolCore<T>::publish_moved(PageId pid, translation::Entry& e, translation::EntryWord held, FrameId to) {
  const FrameId from = held.frame();
  // Stable under the exclusive latch: flush never leaves it kWrittenUnsynced to a mover
  // (promotions hold flush_mutex_; demotion's victims are never kWrittenUnsynced).
  CALICO_DCHECK(meta_[from].dirty.load(std::memory_order_relaxed) != pool::kWrittenUnsynced);
  meta_[to].dirty.store(meta_[from].dirty.load(std::memory_order_relaxed), std::memory_order_relaxed);
  publish_owner(to, pid, e);
  uint32_t seed = meta_[to].version_seed.load(std::memory_order_relaxed);
  e.store(translation::EntryWord::make(to, seed, translation::kUnlocked).raw, std::memory_order_release);
}

template <class T>
void pool::PoolCore<T>::release_moved_frame(translation::EntryWord held) {
  const FrameId f = held.frame();
  pool::FrameMeta& m = meta_[f];
  // Version ABA (entry.h): a reader holding {f, held's version} never validates again, even
  // if this page or another comes back to f.
  m.version_seed.store(held.version() + 1, std::memory_order_relaxed);
  m.dirty.store(0, std::memory_order_relaxed);
  clear_owner(f);
  if constexpr (!T::kPagesInPlace && CALICO_CHECKS_LEVEL >= 2) {
    // Poison, as eviction does: a reader that skipped validation sees garbage. (Pages in
    // place: the source was discarded and reads as zeros; the token's arena is never touched.)
    std::memset(frames_.frame(f), 0xA5, options_.page_size);
  }
  free_frame(f);
}

}  // namespace calico
