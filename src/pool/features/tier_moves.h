// pool::PoolCore<T> tier migration (docs/results/tiers.md, "Calico tiers"; state in pool/features/tiering.h):
// promotion of far pages on access, demotion of cold fast pages when the fast tier fills,
// and eviction to disk only of pages that leave the far tier. Included by
// definitions.h; every function here runs only when the pool has a far tier.
//
// Entry points: far_hit (from the access paths), make_room_tiered (from evict_batch),
// move_to_tier (tests and diagnostics).
//
// A move is the shared primitive of pool/features/promotion.h (move_page + release_moved_frame):
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
// Batched migration (translation::BatchedMigration policies: vmcache_n, translation/vmcache_n.h):
// demotion and far eviction rounds take demotion_batch pages; a demotion round latches its
// victims (CLOCK), copies them all, discards the sources (pages in place: one madvise per
// run of adjacent blocks), then publishes them (migrate_latched). An access that draws
// promotion only queues its page (queue_promotion: a leaf mutex, each page once); the access
// that queues the promotion_batch-th page takes the queue and runs promote_batch: steps 1-3
// above (fault_latch of each space of the batch), fast frames for the whole batch first (so
// no page is latched during a demotion round), then each queued page still far and
// unlatched latched by CAS, and migrate_latched. A batch that cannot take flush_mutex_ is
// dropped: its pages are drawn again by later accesses.
//
// Lock order: flush_mutex_ -> fault_latch -> evict_mutex_ (pool/README.md); a promotion
// takes each only by trying, and entry latches only by CAS, so a thread holding pins can
// promote without deadlock.
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
bool pool::PoolCore<T>::far_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
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
      if constexpr (kBatchedMigration) {
        if (queue_promotion(pid)) return true;
      } else {
        if (try_promote_far(space, pid, e, w)) return true;
      }
    }
    charge_far_access();
    return false;
  }
}

template <class T>
void pool::PoolCore<T>::charge_far_access() const {
  far_->tier->charge_lines(far_->lines_per_access);
}

template <class T>
bool pool::PoolCore<T>::try_promote_far(Space* space, PageId pid, translation::Entry& e,
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
    after_failed_cas(space, pid.block(), e);
    return false;
  }
  EntryWord held = seen.with_state(translation::kExclusive);
  if (!owns(space, e, pid)) [[unlikely]] {  // recycled for another page: not ours to move
    translation::unlock_exclusive(e, held, /*bump_version=*/false);
    free_list_.push(to);
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  move_page(space, pid, e, held, to);
  release_moved_frame(held);
  count_migration(start);
  far_->promotions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <class T>
uint32_t pool::PoolCore<T>::demote_locked(uint32_t n) {
  CALICO_DCHECK(far_ != nullptr && n <= far_->free.size());
  std::vector<Victim> victims;
  victims.reserve(n);
  VictimLatches latches{victims};
  collect_victims(clock_, fast_last_, n, victims);
  std::vector<FrameId> to;
  to.reserve(victims.size());
  for (size_t i = 0; i < victims.size(); ++i) {
    // Only demotion pops far frames, under evict_mutex_, and n <= free far frames.
    to.push_back(far_->free.pop());
    CALICO_CHECK(to.back() != kInvalidFrame);
  }
  const auto moved = static_cast<uint32_t>(victims.size());
  if constexpr (kBatchedMigration) {
    migrate_latched(victims, to);  // the batch as one (vmcache^n's move_pages of a batch)
  } else {
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < victims.size(); ++i) {
      Victim& v = victims[i];
      move_page(v.space, v.pid, *v.entry, v.held, to[i]);
      v.done = true;
      release_moved_frame(v.held);
    }
    count_migration(start);
  }
  far_->demotions.fetch_add(moved, std::memory_order_relaxed);
  return moved;
}

template <class T>
uint32_t pool::PoolCore<T>::make_room_tiered(io::IoRing& ring, WriteFailure* write_failure) {
  const FrameId far_frames = far_->last - fast_last_;
  const uint32_t want = std::min<uint32_t>(kBatchedMigration ? options_.tiers.demotion_batch : options_.eviction_batch, fast_last_);
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
bool pool::PoolCore<T>::move_to_tier(PageId pid, int tier) {
  using translation::EntryWord;
  if (tier != 0 && tier != 1) {
    throw Error(ErrorCode::kInvalidArgument, "tier " + std::to_string(tier) + " is not 0 (fast) or 1 (far)", pid);
  }
  Space* space;
  translation::Entry* e = find_entry_for(pid, &space);
  if (far_ == nullptr || e == nullptr) return false;
  EntryWord w = translation::load(*e);
  if (!w.resident() || !owns(space, *e, pid)) return false;
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
  if (!owns(space, *e, pid) || meta_[held.frame()].dirty.load(std::memory_order_relaxed) == pool::kWrittenUnsynced) {
    translation::unlock_exclusive(*e, held, /*bump_version=*/false);
    far_->free.push(to);
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  move_page(space, pid, *e, held, to);
  release_moved_frame(held);
  count_migration(start);
  far_->demotions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <class T>
void pool::PoolCore<T>::migrate_latched(std::vector<Victim>& victims, const std::vector<FrameId>& to) {
  CALICO_DCHECK(victims.size() == to.size());
  using Clock = std::chrono::steady_clock;
  auto ns_since = [](Clock::time_point t) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
  };
  const auto start = Clock::now();
  // 0. Pages in place: back each destination page (one write to it; the kernel faults in
  //    and zero-fills a page), timed apart from the copy. The destination is the page's own
  //    address in the other tier's region, which nobody reads: the entry is latched and
  //    still names the source.
  if constexpr (T::kPagesInPlace) {
    for (size_t i = 0; i < victims.size(); ++i) {
      const Victim& v = victims[i];
      if constexpr (kTieredInPlace) v.space->table.acquire_ref(v.pid.block(), tier_of(to[i]));
      *reinterpret_cast<volatile std::byte*>(page_data(v.space, v.pid, to[i])) = std::byte{0};
    }
    far_->fault_ns.fetch_add(ns_since(start), std::memory_order_relaxed);
  }
  // 1. Copy every page (the kernel's migrate_folio of each page of a move_pages batch).
  const auto copy_start = Clock::now();
  for (size_t i = 0; i < victims.size(); ++i) {
    const Victim& v = victims[i];
    CALICO_DCHECK(v.held.state() == translation::kExclusive && in_far_tier(v.frame) != in_far_tier(to[i]));
    copy_page(v.space, v.pid, v.frame, to[i]);
  }
  far_->copy_ns.fetch_add(ns_since(copy_start), std::memory_order_relaxed);
  // 2. Pages in place: discard the sources, still latched (as move_page), one madvise per run
  //    of adjacent blocks of one space (the batch's single TLB flush, as far as madvise goes).
  if constexpr (T::kPagesInPlace) {
    const auto discard_start = Clock::now();
    std::vector<uint32_t> order(victims.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return victims[a].pid.raw < victims[b].pid.raw; });
    for (size_t i = 0; i < order.size();) {
      const Victim& first = victims[order[i]];
      size_t j = i + 1;
      while (j < order.size() && victims[order[j]].pid.raw == first.pid.raw + (j - i) &&
             victims[order[j]].space == first.space) {
        ++j;
      }
      if constexpr (kTieredInPlace) {
        first.space->table.discard(first.pid.block(), tier_of(first.frame), static_cast<uint32_t>(j - i));
      } else {
        for (size_t k = i; k < j; ++k) discard_in_place(victims[order[k]].space, victims[order[k]].pid, victims[order[k]].frame);
      }
      i = j;
    }
    far_->discard_ns.fetch_add(ns_since(discard_start), std::memory_order_relaxed);
  }
  // 3. Publish each page in its new frame, unlatched, and free its old frame.
  for (size_t i = 0; i < victims.size(); ++i) {
    Victim& v = victims[i];
    publish_moved(v.pid, *v.entry, v.held, to[i]);
    v.done = true;
    release_moved_frame(v.held);
  }
  count_migration(start);
}

template <class T>
void pool::PoolCore<T>::count_migration(std::chrono::steady_clock::time_point start) const {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  far_->migration_ns.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
}

template <class T>
bool pool::PoolCore<T>::queue_promotion(PageId pid) {
  std::vector<PageId> batch;
  {
    std::lock_guard lock(far_->queue_mutex);
    std::vector<PageId>& q = far_->queue;
    if (std::find(q.begin(), q.end(), pid) != q.end()) return false;  // queued already
    q.push_back(pid);
    if (q.size() < options_.tiers.promotion_batch) return false;
    batch.swap(q);
  }
  return promote_batch(batch, pid);
}

template <class T>
bool pool::PoolCore<T>::promote_batch(std::vector<PageId>& batch, PageId wanted) {
  using translation::EntryWord;
  // As try_promote_far, every step only tried; a batch that cannot start is dropped (its
  // pages are drawn again by later accesses).
  std::unique_lock flush_lock(flush_mutex_, std::try_to_lock);
  if (!flush_lock.owns_lock()) return false;
  std::sort(batch.begin(), batch.end(), [](PageId a, PageId b) { return a.raw < b.raw; });
  // Fast frames first, so that no page is latched while a demotion round runs.
  std::vector<FrameId> to;
  to.reserve(batch.size());
  for (bool evicted = false; to.size() < batch.size();) {
    FrameId f = free_list_.pop();
    if (f != kInvalidFrame) {
      to.push_back(f);
      continue;
    }
    if (evicted) break;
    evicted = true;
    try {
      evict_batch(/*wait=*/false);
    } catch (const Error&) {
      break;  // no I/O ring for this thread: promote what the frames allow
    }
  }
  // The pages: each space's fault_latch shared (a move installs pages, as a fault does), then
  // each page's exclusive latch by CAS from an unlatched word in the far tier.
  std::vector<std::shared_lock<std::shared_mutex>> space_locks;
  std::vector<Victim> victims;
  victims.reserve(to.size());
  bool moved_wanted = false;
  {
    VictimLatches latches{victims};
    Space* space = nullptr;
    SpaceId locked = kInvalidSpace;
    for (PageId pid : batch) {
      if (victims.size() == to.size()) break;
      if (pid.space() != locked) {
        locked = pid.space();
        space = directory_.lookup(locked);
        if (space == nullptr) continue;
        std::shared_lock lock(space->fault_latch, std::try_to_lock);
        if (!lock.owns_lock() || !space->alive.load(std::memory_order_acquire)) {
          space = nullptr;
          continue;
        }
        space_locks.push_back(std::move(lock));
      }
      if (space == nullptr) continue;
      translation::Entry* e = existing_entry(space, pid.block());
      if (e == nullptr) continue;
      EntryWord w = translation::load(*e);
      if (!w.resident() || !in_far_tier(w.frame()) || !w.unlatched()) continue;
      if (!translation::try_lock_exclusive(*e, w)) continue;
      EntryWord held = w.with_state(translation::kExclusive);
      if (!owns(space, *e, pid)) [[unlikely]] {
        translation::unlock_exclusive(*e, held, /*bump_version=*/false);
        continue;
      }
      victims.push_back({space, pid, w.frame(), e, held, false, false});
      moved_wanted = moved_wanted || pid == wanted;
    }
    // Frames nobody needs go back.
    while (to.size() > victims.size()) {
      free_list_.push(to.back());
      to.pop_back();
    }
    if (victims.empty()) return false;
    migrate_latched(victims, to);
  }
  far_->promotions.fetch_add(victims.size(), std::memory_order_relaxed);
  far_->promotion_batches.fetch_add(1, std::memory_order_relaxed);
  return moved_wanted;
}

}  // namespace calico
