// BasicBufferPool<T> eviction: frames for faults, CLOCK with the reference bit in the entry (kMarked), batched
// write-back, and the hole-punch release (Algorithm 3 with the reservation protocol of
// translation/hole_punch_counter.h).
//
// One evictor at a time (evict_mutex_). A round:
//   1. Move the hand over frames. For each owned frame, confirm through its entry (the frame
//      ids must match): unlocked -> CAS to marked (first chance); marked -> CAS to exclusive
//      (victim). Pinned, latched, loading pages are passed over.
//   2. Write all dirty victims in one io_uring batch (trailer stamped under the latch).
//      A victim whose write fails is unlatched and kept, still dirty: nothing is lost.
//   3. For each written or clean victim: (pages in place: discard the page, still latched)
//      seed the frame's next version, clear its owner, zero the entry, release the punch
//      reference (the last one punches the entries' page), delete the entry if the table
//      recycles entries (forget: the page's mapping goes, as in a hash-table buffer manager;
//      translation/entry.h, "Recycled entries"), and give the frame to the free list.
#pragma once

// Part of buffer_pool_impl.h (which includes this file at its end, with the includes and
// using-declarations both parts share).

namespace calico {

template <class T>
FrameId BasicBufferPool<T>::get_frame(bool may_fail, PageId pid) {
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
  if constexpr (pool::Predicting<T>) {
    // Predictive translation: a page is loaded into its preferred frame when that is free
    // (pool/promotion.h moves it there later otherwise). The owner test skips the free
    // list's lock when the frame is visibly taken.
    FrameId want = predictor_.preferred_frame(pid);
    if (meta_[want].owner.load(std::memory_order_relaxed) == 0 && free_list_.take(want)) return want;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kPoolFullWaitMs);
  for (;;) {
    // Below the low watermark, make room ahead of need, unless another thread already is.
    if (free_list_.size() <= low_watermark_) evict_batch(/*wait=*/false);
    FrameId f = free_list_.pop();
    if (f != kInvalidFrame) return f;
    if (evict_batch(/*wait=*/true) > 0) continue;
    if (may_fail) return kInvalidFrame;
    // Every frame is pinned, latched or loading. Pins are usually short: wait a bounded time
    // (kPoolFullWaitMs) before reporting a full pool. Completed prefetches free up frames too.
    {
      std::unique_lock lock(async_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        async_ring_->reap([&](uint64_t slot, int res) { complete_async(slot, res); }, false);
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorCode::kPoolFull, "all " + std::to_string(frames_.num_frames()) +
                                            " frames are pinned or latched");
    }
    std::this_thread::yield();
  }
}

template <class T>
uint32_t BasicBufferPool<T>::evict_batch(bool wait) {
  if constexpr (T::kDirect) return 0;  // direct translation never evicts
  std::unique_lock lock(evict_mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return 0;
  }
  if (free_list_.size() > low_watermark_) return 1;  // another evictor just made room

  struct Victim {
    Space* space;
    PageId pid;
    FrameId frame;
    translation::Entry* entry;  // latched exclusively by this round
    EntryWord held;
    bool write_failed;
  };
  const uint32_t batch = std::min<uint32_t>(options_.eviction_batch, frames_.num_frames());
  std::vector<Victim> victims;
  victims.reserve(batch);
  // Two passes over all frames mark and then take every unpinned page; more finds nothing.
  const uint64_t scan_limit = 2 * uint64_t{frames_.num_frames()} + batch;
  for (uint64_t scanned = 0; scanned < scan_limit && victims.size() < batch; ++scanned) {
    FrameId f = clock_.advance();
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
      if (!owns(*e, pid)) [[unlikely]] {  // recycled for the page now in f: not ours to evict
        translation::unlock_exclusive(*e, w.with_state(kExclusive), /*bump_version=*/false);
        continue;
      }
      victims.push_back({s, pid, f, e, w.with_state(kExclusive), false});
    }
  }

  std::vector<io::IoRequest> writes;
  std::vector<Victim*> writers;
  for (Victim& v : victims) {
    if (meta_[v.frame].dirty.load(std::memory_order_relaxed) == 0) continue;
    io::stamp_page(page_data(v.space, v.pid, v.frame), options_.page_size, v.pid);
    writes.push_back(io::IoRequest{v.space->file.fd(), uint64_t{v.pid.block()} * options_.page_size,
                                   page_data(v.space, v.pid, v.frame), static_cast<uint32_t>(options_.page_size),
                                   true, 0, 0});
    writers.push_back(&v);
  }
  std::string first_error;
  if (!writes.empty()) {
    thread_ring().submit_and_wait(writes);
    for (size_t i = 0; i < writes.size(); ++i) {
      if (writes[i].result == static_cast<int>(options_.page_size)) {
        counters_.write_backs.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      Victim& v = *writers[i];
      v.write_failed = true;
      if (first_error.empty()) {
        first_error = "writing back page " + std::to_string(v.pid.space()) + ":" +
                      std::to_string(v.pid.block()) + ": " +
                      (writes[i].result < 0 ? std::strerror(-writes[i].result) : "short write");
      }
    }
  }

  uint32_t freed = 0;
  for (Victim& v : victims) {
    translation::Entry& e = *v.entry;
    if (v.write_failed) {
      translation::unlock_exclusive(e, v.held, /*bump_version=*/false);  // kept, still dirty
      continue;
    }
    if constexpr (T::kPagesInPlace) {
      // The page's memory goes back to the OS while the latch is still held: once the entry
      // is zero, a fault may read the page into the same address, which a later discard
      // would wipe. No poison: the address is the page's own, and a discarded page reads as
      // zeros (a reader that skipped validation sees an empty page).
      v.space->table.discard(v.pid.block());
    }
    pool::FrameMeta& m = meta_[v.frame];
    m.version_seed.store(v.held.version() + 1, std::memory_order_relaxed);
    m.dirty.store(0, std::memory_order_relaxed);
    clear_owner(v.frame);
    e.store(0, std::memory_order_release);
    if (v.space->table.release_ref(v.pid.block())) counters_.punches.fetch_add(1, std::memory_order_relaxed);
    forget(v.space, v.pid.block());
    if constexpr (!T::kPagesInPlace && CALICO_CHECKS_LEVEL >= 2) {
      // Poison: a reader that skipped validation now sees garbage, not a plausible page.
      std::memset(frames_.frame(v.frame), 0xA5, options_.page_size);
    }
    free_list_.push(v.frame);
    ++freed;
  }
  counters_.evictions.fetch_add(freed, std::memory_order_relaxed);
  if (!first_error.empty()) throw Error(ErrorCode::kIoError, first_error + " (the page stays dirty)");
  return freed;
}

}  // namespace calico
