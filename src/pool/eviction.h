// pool::PoolCore<T> eviction: frames for faults, CLOCK with the reference bit in the entry (kMarked), batched
// write-back, and the hole-punch release (Algorithm 3 with the reservation protocol of
// translation/array/hole_punch_counter.h).
//
// One evictor at a time (evict_mutex_). A round:
//   1. Move the hand over frames. For each owned frame, confirm through its entry (the frame
//      ids must match): unlocked -> CAS to marked (first chance); marked -> CAS to exclusive
//      (victim). Pinned, latched, loading pages are passed over.
//      A page flush() wrote and has not synced yet (kWrittenUnsynced) is never a victim: if
//      the sync fails, flush must find it in memory to write it again (README rule 6).
//   2. Write all dirty victims in one io_uring batch (trailer stamped under the latch).
//      A victim whose write fails is unlatched and kept, still dirty: nothing is lost. The
//      failure is the page's: it is counted (stats().write_back_failures) and described
//      to the caller, never thrown at it (get_frame decides whether it matters).
// Every victim latched in step 1 is unlatched on every path out (VictimLatches), and the
// thread's ring exists before step 1, so a thread that cannot have one latches nothing.
// With a far tier (pool/features/tiering.h) a round frees tier-0 frames by demotion instead
// (make_room_tiered, pool/features/tier_moves.h), and only pages leaving the far tier go to disk.
//   3. For each written or clean victim: (pages in place: discard the page, still latched)
//      seed the frame's next version, clear its owner, zero the entry, release the punch
//      reference (the last one punches the entries' page), delete the entry if the table
//      recycles entries (forget: the page's mapping goes, as in a hash-table buffer manager;
//      translation/entry.h, "Recycled entries"), and give the frame to the free list.
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
FrameId pool::PoolCore<T>::get_frame(bool may_fail, PageId pid) {
  if constexpr (T::kDirect) {
    // Block b lives in frame b + 1 or nowhere; nothing is evicted (array.h, DirectTranslation).
    FrameId f = pid.block() < frames_.num_frames() ? static_cast<FrameId>(pid.block()) + 1 : kInvalidFrame;
    if (f != kInvalidFrame && free_list_.take(f)) return f;
    if (may_fail) return kInvalidFrame;
    throw Error(ErrorCode::kPoolFull,
                "direct translation: block " + std::to_string(pid.block()) + " of space " +
                    std::to_string(pid.space()) + " has no frame of its own (the pool has " +
                    std::to_string(frames_.num_frames()) +
                    " frames; direct needs every page of one space resident)",
                pid);
  }
  if constexpr (requires { T::preferred_frame(pid, frames_.num_frames()); }) {
    FrameId want = T::preferred_frame(pid, frames_.num_frames());
    if (want != kInvalidFrame && free_list_.take(want)) return want;
  }
  if constexpr (translation::Predicting<T>) {
    // Predictive translation: a page is loaded into its preferred frame when that is free
    // (pool/features/promotion.h moves it there later otherwise). The owner test skips the free
    // list's lock when the frame is visibly taken.
    FrameId want = predictor_.preferred_frame(pid);
    if (meta_[want].owner.load(std::memory_order_relaxed) == 0 && free_list_.take(want)) return want;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.pool_full_wait_ms);
  int failed_rounds = 0;  // consecutive rounds that freed nothing because writes failed
  for (;;) {
    // Below the low watermark, make room ahead of need, unless another thread already is.
    // Its write failures are not this caller's concern: they are counted in stats().
    if (free_list_.size() <= low_watermark_) evict_batch(/*wait=*/false);
    FrameId f = free_list_.pop();
    if (f != kInvalidFrame) return f;
    WriteFailure failure;
    if (evict_batch(/*wait=*/true, &failure) > 0) {
      failed_rounds = 0;
      continue;
    }
    if (may_fail) return kInvalidFrame;
    if (failure.pid.valid()) {
      // No frame because pages cannot be written back: after a few rounds (each retries
      // them), that is an I/O error, and it names the page that cannot be written.
      if (++failed_rounds >= kMaxFailedEvictionRounds) {
        throw Error(ErrorCode::kIoError, "no frame for page " + std::to_string(pid.space()) + ":" +
                                             std::to_string(pid.block()) + ": " + failure.what,
                    failure.pid);
      }
      continue;
    }
    failed_rounds = 0;
    // Every frame is pinned, latched or loading. Pins are usually short: wait a bounded time
    // (PoolOptions::pool_full_wait_ms) before reporting a full pool. Completed prefetches free up frames too
    // (no lane is held here: prefetch_group asks may_fail and has returned above).
    reap_other_lanes(/*include_own=*/true);
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorCode::kPoolFull, "all " + std::to_string(frames_.num_frames()) +
                                            " frames stayed pinned or latched for " +
                                            std::to_string(options_.pool_full_wait_ms) + " ms (pool_full_wait_ms)");
    }
    std::this_thread::yield();
  }
}

template <class T>
uint32_t pool::PoolCore<T>::evict_batch(bool wait, WriteFailure* write_failure) {
  if constexpr (T::kDirect) return 0;  // direct translation never evicts
  // The ring first: a thread that cannot have one (no file descriptor left) fails here,
  // having latched nothing.
  io::IoRing& ring = thread_ring();
  std::unique_lock lock(evict_mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return 0;
  }
  if (free_list_.size() > low_watermark_) return 1;  // another evictor just made room
  // Reads other threads prefetched and never waited for hold their frames until someone
  // reaps them: once per round, so that they become pages the hand can evict.
  reap_other_lanes();
  if constexpr (kTierable) {
    if (far_ != nullptr) return make_room_tiered(ring, write_failure);
  }
  return evict_locked(ring, clock_, fast_last_, 0, write_failure);
}

template <class T>
void pool::PoolCore<T>::collect_victims(pool::ClockHand& hand, FrameId range_frames, uint32_t batch,
                                         std::vector<Victim>& victims) {
  CALICO_DCHECK(victims.capacity() >= batch);
  // Two passes over all frames mark and then take every unpinned page; more finds nothing.
  const uint64_t scan_limit = 2 * uint64_t{range_frames} + batch;
  for (uint64_t scanned = 0; scanned < scan_limit && victims.size() < batch; ++scanned) {
    FrameId f = hand.advance();
    PageId pid(meta_[f].owner.load(std::memory_order_acquire));
    if (!pid.valid()) continue;  // free, or being loaded
    Space* s = directory_.lookup(pid.space());
    if (s == nullptr) continue;  // being dropped: drop_space discards its frames
    translation::Entry* e = existing_entry(s, pid.block());  // recycling tables: never inserts
    if (e == nullptr) continue;  // stale owner hint
    EntryWord w = translation::load(*e);
    if (w.frame() != f) continue;  // stale owner hint
    if (w.state() == kUnlocked) {
      translation::try_cas(*e, w, w.with_state(kMarked));
    } else if (w.state() == kMarked && translation::try_cas(*e, w, w.with_state(kExclusive))) {
      if (!owns(s, *e, pid)) [[unlikely]] {  // recycled for the page now in f: not ours to evict
        translation::unlock_exclusive(*e, w.with_state(kExclusive), /*bump_version=*/false);
        continue;
      }
      // Written by the flush in progress, not yet synced: it stays until the sync decides.
      // (Set under flush's shared latch, so stable while we hold the exclusive one.)
      if (meta_[f].dirty.load(std::memory_order_relaxed) == pool::kWrittenUnsynced) {
        translation::unlock_exclusive(*e, w.with_state(kExclusive), /*bump_version=*/false);
        continue;
      }
      victims.push_back({s, pid, f, e, w.with_state(kExclusive), false, false});
    }
  }
}

template <class T>
uint32_t pool::PoolCore<T>::evict_locked(io::IoRing& ring, pool::ClockHand& hand, FrameId range_frames, int tier,
                                          WriteFailure* write_failure) {
  (void)tier;  // counted with a far tier only
  // Batched policies (vmcache_n) evict the far tier demotion_batch pages at a time.
  const uint32_t batch =
      std::min<uint32_t>(kBatchedMigration && tier == 1 ? options_.tiers.demotion_batch : options_.eviction_batch, range_frames);
  std::vector<Victim> victims;
  victims.reserve(batch);
  VictimLatches latches{victims};
  collect_victims(hand, range_frames, batch, victims);

  std::vector<io::IoRequest> writes;
  std::vector<Victim*> writers;
  for (Victim& v : victims) {
    if (meta_[v.frame].dirty.load(std::memory_order_relaxed) == pool::kClean) continue;
    io::stamp_page(page_data(v.space, v.pid, v.frame), options_.page_size, v.pid);
    writes.push_back(io::IoRequest{v.space->file.fd(), uint64_t{v.pid.block()} * options_.page_size,
                                   page_data(v.space, v.pid, v.frame), static_cast<uint32_t>(options_.page_size),
                                   true, 0, 0});
    writers.push_back(&v);
  }
  // The rollback journal first (pool/journal.h): the images of pages the last flush made
  // durable, saved and synced before any of them is overwritten; its epoch guard is held
  // until the writes complete. If it fails, no victim is written: each stays dirty.
  std::shared_lock<std::shared_mutex> epoch;
  if (!writes.empty() && journal_ != nullptr) {
    epoch = journal_->epoch_guard();
    std::vector<pool::Journal::Target> targets;
    targets.reserve(writers.size());
    for (const Victim* v : writers) targets.push_back({v->pid.space(), v->space->file.fd(), v->pid.block()});
    try {
      journal_->save(targets, ring);
    } catch (const Error& e) {
      for (Victim* v : writers) v->write_failed = true;
      counters_.write_back_failures.fetch_add(writers.size(), std::memory_order_relaxed);
      if (write_failure != nullptr && !write_failure->pid.valid()) {
        write_failure->pid = writers.front()->pid;
        write_failure->what = std::string(e.what()) + " (the pages stay dirty in memory)";
      }
      writes.clear();
    }
  }
  if (!writes.empty()) {
    ring.submit_and_wait(writes);
    for (size_t i = 0; i < writes.size(); ++i) {
      Victim& v = *writers[i];
      if (writes[i].result == static_cast<int>(options_.page_size)) {
        counters_.write_backs.fetch_add(1, std::memory_order_relaxed);
        v.space->unsynced_evictions.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      v.write_failed = true;
      counters_.write_back_failures.fetch_add(1, std::memory_order_relaxed);
      if (write_failure != nullptr && !write_failure->pid.valid()) {
        write_failure->pid = v.pid;
        write_failure->what = "writing back page " + std::to_string(v.pid.space()) + ":" +
                              std::to_string(v.pid.block()) + " of " + v.space->file.path() + ": " +
                              pool::transfer_error_text(writes[i].result, options_.page_size) +
                              " (the page stays dirty in memory)";
      }
    }
  }

  if (epoch.owns_lock()) epoch.unlock();

  uint32_t freed = 0;
  for (Victim& v : victims) {
    translation::Entry& e = *v.entry;
    v.done = true;
    if (v.write_failed) {
      translation::unlock_exclusive(e, v.held, /*bump_version=*/false);  // kept, still dirty
      continue;
    }
    if constexpr (T::kPagesInPlace) {
      // The page's memory goes back to the OS while the latch is still held: once the entry
      // is zero, a fault may read the page into the same address, which a later discard
      // would wipe. No poison: the address is the page's own, and a discarded page reads as
      // zeros (a reader that skipped validation sees an empty page).
      discard_in_place(v.space, v.pid, v.frame);  // the region of the frame's tier
    }
    pool::FrameMeta& m = meta_[v.frame];
    m.version_seed.store(v.held.version() + 1, std::memory_order_relaxed);
    m.dirty.store(pool::kClean, std::memory_order_relaxed);
    clear_owner(v.frame);
    e.store(0, std::memory_order_release);
    release_ref(v.space, v.pid.block());
    forget(v.space, v.pid.block(), e);
    if constexpr (!T::kPagesInPlace && CALICO_CHECKS_LEVEL >= 2) {
      // Poison: a reader that skipped validation now sees garbage, not a plausible page.
      std::memset(frames_.frame(v.frame), 0xA5, options_.page_size);
    }
    free_frame(v.frame);
    ++freed;
  }
  counters_.evictions.fetch_add(freed, std::memory_order_relaxed);
  if constexpr (kSparseGroups) {
    // Groups these evictions left with few references move to the side table (only tried:
    // pool/features/sparse_groups.h), each group once per round.
    for (size_t i = 0; i < victims.size(); ++i) {
      const Victim& v = victims[i];
      auto& t = v.space->table;
      const uint64_t group = v.pid.raw / translation::kEntriesPerGroup;  // space and group
      auto same_group = [&](const Victim& u) { return u.pid.raw / translation::kEntriesPerGroup == group; };
      if (v.write_failed || std::any_of(victims.begin(), victims.begin() + i, same_group)) continue;
      const uint32_t count = t.group_count(v.pid.block());
      if (!t.group_sparse(v.pid.block()) && count > 0 && count <= t.sparse_group_at()) {
        try_sparsify(v.space, v.pid.block());
      }
    }
  }
  if constexpr (kTierable) {
    if (far_ != nullptr) far_->evictions[tier].fetch_add(freed, std::memory_order_relaxed);
  }
  return freed;
}

}  // namespace calico
