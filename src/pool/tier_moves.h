// BasicBufferPool<T> tier migration (issue 17, "Calico tiers"; state in pool/tiering.h):
// promotion of far pages on access, demotion of cold fast pages when the fast tier fills,
// and eviction to disk only of pages that leave the far tier. Included by
// buffer_pool_impl.h; every function here runs only when the pool has a far tier.
//
// Entry points: far_hit (from the access paths), make_room_tiered (from evict_batch),
// move_to_tier (tests and diagnostics).
//
// A move is the shared primitive of pool/promotion.h (move_page + release_moved_frame):
// under the page's exclusive latch, taken by CAS from an unlatched word, copy the page into a
// free frame of the other tier (the far tier's copy(): its link is the bottleneck, and may
// wait for bandwidth), carry the dirty bit, set the new frame's owner, publish
// {new frame, new frame's version seed, unlocked}; then the old frame gets seed
// `version + 1`, owner 0, poison, and goes back to its tier's free list.
// Why optimistic readers stay correct: a reader holds {old frame, v}; after the move the
// entry shows another frame, so validate() fails. Later the page (or another) may come back
// to the old frame, but it starts there at the seed v + 1 or above (versions shown with one
// frame only grow, entry.h "Version ABA"), so {old frame, v} never shows again.
// Pins cannot exist during a move: the latch was taken from unlatched.
//
// Promotion (far_hit -> try_promote_far), on an access that finds its page in the far tier,
// with probability promote_on_read / promote_on_write; every step only *tried*:
//   1. flush_mutex_ (a page moving to a lower frame id could pass behind flush's ascending
//      frame scan and be missed; this also serialises promotions);
//   2. the space's fault_latch shared, and `alive` (a move installs a page in a frame, as a
//      fault does: drop_space excludes it);
//   3. a free fast frame, demoting a batch first when there is none (evict_batch without
//      waiting: it tries evict_mutex_);
//   4. the page's exclusive latch by CAS from the word the access saw; then the move.
// Demotion (make_room_tiered, under evict_mutex_, from evict_batch when tier 0's free frames
// fall to the low watermark): if the far tier has fewer free frames than a batch, evict a
// batch of far pages to disk (CLOCK over tier 1, written back if dirty); then CLOCK over
// tier 0 latches up to that many victims (never kWrittenUnsynced pages, as eviction) and
// moves each into a far frame. Demotion needs no flush_mutex_: it moves a page to a higher
// frame id, which flush's ascending scan reaches after the old one, and it never moves a
// page flush has written and not yet synced. It needs no fault_latch: drop_space discards
// frames in rounds under evict_mutex_, so a round never overlaps a demotion, and CLOCK
// skips spaces being dropped. Only when the far tier can take nothing (its pages all pinned
// or their write-backs failing) are fast pages evicted straight to disk.
//
// Lock order: flush_mutex_ -> fault_latch -> evict_mutex_ (pool/README.md); a promotion
// takes each only by trying, and entry latches only by CAS, so a thread holding pins can
// promote without deadlock.
#pragma once

#include <algorithm>
#include <mutex>
#include <shared_mutex>

namespace calico {

template <class T>
bool BasicBufferPool<T>::far_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
                                 bool write) {
  if constexpr (!kTierable) {
    (void)space, (void)pid, (void)e, (void)w, (void)write;
    return false;
  } else {
    CALICO_DCHECK(far_ != nullptr && in_far_tier(w.frame()));
    // Only an access that goes ahead counts; a latched page is waited for by the caller.
    const bool proceeds = write ? w.unlatched() : w.state() != translation::kExclusive;
    if (!proceeds) return false;
    std::atomic<uint64_t>& hits = thread_counter()->far_hits;
    hits.store(hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (w.unlatched() && pool::draw_below(write ? far_->promote_write : far_->promote_read)) {
      if (try_promote_far(space, pid, e, w)) return true;
    }
    charge_far_access();
    return false;
  }
}

template <class T>
void BasicBufferPool<T>::charge_far_access() const {
  far_->tier->charge_lines(far_->lines_per_access);
}

template <class T>
bool BasicBufferPool<T>::try_promote_far(Space* space, PageId pid, translation::Entry& e,
                                         translation::EntryWord seen) {
  using translation::EntryWord;
  CALICO_DCHECK(far_ != nullptr && in_far_tier(seen.frame()));
  std::unique_lock flush_lock(flush_mutex_, std::try_to_lock);  // 1
  if (!flush_lock.owns_lock()) return false;
  std::shared_lock fault_lock(space->fault_latch, std::try_to_lock);  // 2
  if (!fault_lock.owns_lock() || !space->alive.load(std::memory_order_acquire)) return false;
  FrameId to = free_list_.pop();  // 3
  if (to == kInvalidFrame) {
    try {
      evict_batch(/*wait=*/false);
    } catch (const Error&) {
      return false;  // no I/O ring for this thread: the access goes on without promoting
    }
    to = free_list_.pop();
    if (to == kInvalidFrame) return false;
  }
  CALICO_DCHECK(!in_far_tier(to));
  if (!translation::try_lock_exclusive(e, seen)) {  // 4
    free_list_.push(to);
    return false;
  }
  EntryWord held = seen.with_state(translation::kExclusive);
  if (!owns(e, pid)) [[unlikely]] {  // recycled for another page: not ours to move
    translation::unlock_exclusive(e, held, /*bump_version=*/false);
    free_list_.push(to);
    return false;
  }
  move_page(pid, e, held, to);
  release_moved_frame(held);
  far_->promotions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <class T>
uint32_t BasicBufferPool<T>::demote_locked(uint32_t n) {
  CALICO_DCHECK(far_ != nullptr && n <= far_->free.size());
  std::vector<Victim> victims;
  victims.reserve(n);
  VictimLatches latches{victims};
  collect_victims(clock_, fast_last_, n, victims);
  uint32_t moved = 0;
  for (Victim& v : victims) {
    // Only demotion pops far frames, under evict_mutex_, and n <= free far frames.
    const FrameId to = far_->free.pop();
    CALICO_CHECK(to != kInvalidFrame);
    move_page(v.pid, *v.entry, v.held, to);
    v.done = true;
    release_moved_frame(v.held);
    ++moved;
  }
  far_->demotions.fetch_add(moved, std::memory_order_relaxed);
  return moved;
}

template <class T>
uint32_t BasicBufferPool<T>::make_room_tiered(io::IoRing& ring, WriteFailure* write_failure) {
  const FrameId far_frames = far_->last - fast_last_;
  const uint32_t want = std::min<uint32_t>(options_.eviction_batch, fast_last_);
  if (far_->free.size() < want) evict_locked(ring, far_->clock, far_frames, 1, write_failure);
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(want, far_->free.size()));
  if (n > 0) {
    const uint32_t moved = demote_locked(n);
    if (moved > 0) return moved;
  }
  // The far tier can take nothing, or no fast page could be taken: evict fast pages to disk.
  return evict_locked(ring, clock_, fast_last_, 0, write_failure);
}

template <class T>
bool BasicBufferPool<T>::move_to_tier(PageId pid, int tier) {
  using translation::EntryWord;
  if (tier != 0 && tier != 1) {
    throw Error(ErrorCode::kInvalidArgument, "tier " + std::to_string(tier) + " is not 0 (fast) or 1 (far)", pid);
  }
  Space* space;
  translation::Entry* e = find_entry_for(pid, &space);
  if (far_ == nullptr || e == nullptr) return false;
  EntryWord w = translation::load(*e);
  if (!w.resident() || !owns(*e, pid)) return false;
  if (in_far_tier(w.frame()) == (tier == 1)) return true;
  if (tier == 0) return try_promote_far(space, pid, *e, w);
  // One demotion, of this page: as demote_locked.
  io::IoRing& ring = thread_ring();
  std::lock_guard lock(evict_mutex_);
  if (!space->alive.load(std::memory_order_acquire)) return false;
  if (far_->free.size() == 0) evict_locked(ring, far_->clock, far_->last - fast_last_, 1, nullptr);
  const FrameId to = far_->free.pop();
  if (to == kInvalidFrame) return false;
  w = translation::load(*e);
  if (!w.resident() || in_far_tier(w.frame()) || !translation::try_lock_exclusive(*e, w)) {
    far_->free.push(to);
    return false;
  }
  EntryWord held = w.with_state(translation::kExclusive);
  if (!owns(*e, pid) || meta_[held.frame()].dirty.load(std::memory_order_relaxed) == pool::kWrittenUnsynced) {
    translation::unlock_exclusive(*e, held, /*bump_version=*/false);
    far_->free.push(to);
    return false;
  }
  move_page(pid, *e, held, to);
  release_moved_frame(held);
  far_->demotions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace calico
