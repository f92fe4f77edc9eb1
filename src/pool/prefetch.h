// PoolCore: group prefetch ([Calico] Algorithm 4) and prewarm. A group prefetches its
// entries, then the first line of each resident page, then submits one batch of asynchronous
// reads for the evicted ones into the thread's lane (async_lane.h); whoever next meets a
// read's kIoPending entry, or the evictor, completes it (help_async, reap_lane).
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
uint64_t pool::PoolCore<T>::prewarm(SpaceId space, BlockId first, uint64_t count) {
  const uint64_t blocks = space_blocks(space);
  const uint64_t end = first >= blocks ? first : first + std::min<uint64_t>(count, blocks - first);
  // Frames above the low watermark are the room: at or below it, every frame taken starts
  // an eviction batch (get_frame), and a prewarm evicts nothing.
  auto room = [&] {
    const size_t free = free_list_.size();
    return free > low_watermark_ ? free - low_watermark_ : 0;
  };
  auto word = [&](BlockId b) {
    Space* s = live_space(space);
    const translation::Entry* e = s == nullptr ? nullptr : existing_entry(s, b);
    return e == nullptr ? EntryWord{0} : translation::load(*e);
  };
  // Groups of evicted pages, at most the room: prefetch_group's reads take frames in block
  // order. Pages it skipped (no I/O slot free) are read by the pin, in order too.
  constexpr size_t kGroup = 64;
  std::vector<PageId> group;
  for (uint64_t b = first; b < end;) {
    const size_t budget = std::min(kGroup, room());
    if (budget == 0) break;
    group.clear();
    for (; b < end && group.size() < budget; ++b) {
      if (word(static_cast<BlockId>(b)).evicted()) group.push_back(PageId(space, static_cast<BlockId>(b)));
    }
    prefetch_group(group);
    for (PageId pid : group) {
      if (word(pid.block()).evicted() && room() == 0) continue;
      SharedGuard g = pin_shared(pid);  // waits for the prefetch's read, or reads the page
    }
  }
  uint64_t resident = 0;
  for (uint64_t b = first; b < end; ++b) resident += word(static_cast<BlockId>(b)).resident();
  return resident;
}

template <class T>
size_t pool::PoolCore<T>::prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets) {
  if (!offsets.empty() && offsets.size() != pids.size()) {
    throw Error(ErrorCode::kInvalidArgument, "prefetch_group: offsets and pids differ in length");
  }
  return prefetch_group(pids, offsets, nullptr);
}

template <class T>
size_t pool::PoolCore<T>::read_group(std::span<const PageId> pids, std::span<const uint32_t> offsets,
                                      std::span<OptimisticRead> reads) {
  if ((!offsets.empty() && offsets.size() != pids.size()) || reads.size() != pids.size()) {
    throw Error(ErrorCode::kInvalidArgument, "read_group: pids, offsets and reads differ in length");
  }
  return prefetch_group(pids, offsets, reads.data());
}

template <class T>
size_t pool::PoolCore<T>::prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets,
                                          OptimisticRead* reads) {
  constexpr size_t kMaxGroup = 256;  // bounds the stack arrays; larger groups are split
  if (pids.size() > kMaxGroup) {
    size_t submitted = 0;
    for (size_t i = 0; i < pids.size(); i += kMaxGroup) {
      size_t n = std::min(kMaxGroup, pids.size() - i);
      submitted += prefetch_group(pids.subspan(i, n), offsets.empty() ? offsets : offsets.subspan(i, n),
                                  reads == nullptr ? nullptr : reads + i);
    }
    return submitted;
  }
  if constexpr (T::kDirect) {
    if (reads != nullptr) {  // nothing to share: the direct reads themselves
      for (size_t i = 0; i < pids.size(); ++i) reads[i] = read_optimistic(pids[i]);
    }
  }
  translation::Entry* entries[kMaxGroup];
  Space* spaces[kMaxGroup];
  const uint32_t max_offset = options_.page_size - 1;
  auto offset_of = [&](size_t i) { return offsets.empty() ? 0u : std::min<uint32_t>(offsets[i], max_offset); };
  // The thread's path cache, read once (a group mostly lies in one space: its pages then
  // cost no directory lookup and no per-page check beyond the space id).
  const translation::PathCache& c = translation::tls_path_cache;
  const bool cache_ok = path_cached(c, c.space);
  const SpaceId cached_id = c.space;
  Space* const cached_space = static_cast<Space*>(c.owner);
  translation::Entry* const cached_entries = c.entries;
  const uint64_t cached_capacity = c.capacity;
  // The frame prediction of read_fast, where it holds.
  const bool predict = cache_ok && c.delta_stable;
  const uint32_t delta = c.frame_delta;
  // Reads (read_group) are started from the words phase 2 loads, on the conditions of
  // read_fast (a resident, unlatched, unmarked page of the fast tier, owned by its entry),
  // for pages of the cached space (whose access counter is at hand). Policies that promote
  // on access (every read may move the page) start none.
  const bool start_reads = reads != nullptr && cache_ok && !T::kDirect && !translation::Predicting<T>;
  uint64_t started = 0;
  // Phase 1: resolve and prefetch the translation entries (memory-level parallelism), and
  // the predicted frames, so that a correct guess needs no second round trip after the
  // entries arrive. Recycling tables: no entry is created here (the page may be skipped);
  // nullptr = none.
  for (size_t i = 0; i < pids.size(); ++i) {
    const PageId pid = pids[i];
    entries[i] = nullptr;
    spaces[i] = nullptr;
    if (!T::kDirect && reads != nullptr) reads[i].data = nullptr;
    const bool in_cached = cache_ok && pid.space() == cached_id;
    Space* s = in_cached ? cached_space : live_space(pid.space());
    if (s == nullptr) continue;
    if (pid.block() >= (in_cached ? cached_capacity : s->table.capacity())) continue;
    if constexpr (T::kFlatEntries) {
      entries[i] = in_cached ? cached_entries + pid.block() : existing_entry(s, pid.block());
    } else {
      entries[i] = existing_entry(s, pid.block());
    }
    spaces[i] = s;
    __builtin_prefetch(entries[i]);
    if constexpr (!T::kPagesInPlace) {
      if (predict && in_cached) __builtin_prefetch(frames_.frame(pid.block() + delta) + offset_of(i));
    }
  }
  // Phase 2: prefetch resident frames at their offsets; collect the evicted pages.
  uint32_t missing[kMaxGroup];
  size_t n_missing = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    if (spaces[i] == nullptr) continue;
    if (kLookedUpEntries && entries[i] == nullptr) {
      missing[n_missing++] = static_cast<uint32_t>(i);
      continue;
    }
    EntryWord w = translation::load(*entries[i]);  // acquire: then the owner (entry.h R5)
    if (w.resident()) {
      // A hint only: a stale (recycled) entry prefetches a frame for nothing.
      const std::byte* page = page_data(spaces[i], pids[i], w.frame());
      __builtin_prefetch(page + offset_of(i));
      if (start_reads && spaces[i] == cached_space && w.state() == translation::kUnlocked &&
          owns(spaces[i], *entries[i], pids[i]) && !in_far_tier(w.frame())) {
        reads[i] = OptimisticRead{page, entries[i], w, pids[i]};
        ++started;
      }
    } else if (w.evicted() || w.state() == translation::kGone) {
      missing[n_missing++] = static_cast<uint32_t>(i);
    }
  }
  if (started > 0) {  // the accesses read_fast would have counted, in one store
    c.accesses->store(c.accesses->load(std::memory_order_relaxed) + started, std::memory_order_relaxed);
  }
  if (n_missing == 0) return 0;
  // Phase 3: one batch of asynchronous reads for the evicted pages, in this thread's lane.
  const uint32_t lane_index = thread_lane();
  AsyncLane& lane = lanes_[lane_index];
  std::lock_guard lock(lane.mutex);
  if (!lane.ready(options_.async_depth, options_.testing.fault_injector)) {
    // A ring that gave up takes no new reads; the completions the kernel still posts for the
    // reads it holds are collected here (and by other threads' eviction rounds).
    if (lane.ring != nullptr) reap_lane(lane, /*wait=*/false);
    return 0;
  }
  reap_lane(lane, /*wait=*/false);
  const EntryWord pending_word = translation::io_pending_word(lane_index);
  const uint64_t now_ns = pool::monotonic_ns();
  unsigned submitted = 0;
  // The reads pushed so far go to the kernel whatever happens next: their entries are
  // pending, and a thread waiting on one must find it in the ring (async_lane.h).
  auto submit_pushed = [&] {
    if (submitted == 0) return;
    busy_lanes_.fetch_or(uint64_t{1} << lane_index, std::memory_order_relaxed);
    lane.ring->submit();
    counters_.prefetch_issued.fetch_add(submitted, std::memory_order_relaxed);
  };
  try {
    for (size_t k = 0; k < n_missing && !lane.free_slots.empty(); ++k) {
      size_t i = missing[k];
      Space* s = spaces[i];
      PageId pid = pids[i];
      std::shared_lock fault_lock(s->fault_latch, std::try_to_lock);
      if (!fault_lock.owns_lock() || !s->alive.load(std::memory_order_acquire) ||
          pid.block() >= s->num_blocks.load(std::memory_order_acquire)) {
        continue;
      }
      // Recycling tables: the entry is created (or found again) only now that the read will
      // be tried, and checked after the CAS (R4).
      // Sparse groups: looked up again too (the phase-1 pointer may be the array word of a
      // page that lives in the side table).
      translation::Entry& e = kLookedUpEntries ? s->table.entry(pid.block()) : *entries[i];
      if (!acquire_ref_for(s, pid.block(), e)) {  // the group moved since the lookup
        forget(s, pid.block(), e);
        continue;
      }
      if (!translation::try_cas(e, EntryWord{0}, pending_word)) {
        release_ref(s, pid.block());
        continue;
      }
      auto give_back = [&] {  // the claim, its reference and the entry, as before the CAS
        pool::undo_claim(e, pending_word);
        release_ref(s, pid.block());
        forget(s, pid.block(), e);
      };
      if (!owns(s, e, pid)) {  // recycled for another block since the lookup: give it back
        pool::undo_claim(e, pending_word);
        release_ref(s, pid.block());
        continue;
      }
      FrameId f = kInvalidFrame;
      try {
        if (options_.testing.test_points != nullptr) options_.testing.test_points->at(pool::TestPoints::Point::kPrefetchClaimed, pid);
        f = get_frame(/*may_fail=*/true, pid);
      } catch (const Error&) {
        // A write-back failed while making room; the prefetch is only a hint.
      } catch (...) {  // e.g. std::bad_alloc: no pending entry is left without its read
        give_back();
        throw;
      }
      if (f == kInvalidFrame) {
        give_back();
        break;  // no frame to spare: the rest would fail too
      }
      uint32_t slot = lane.free_slots.back();
      lane.free_slots.pop_back();
      lane.pending[slot] = typename AsyncLane::PendingRead{s, pid, f, &e, now_ns};
      bool pushed = lane.ring->push(io::IoRequest{s->file.fd(), uint64_t{pid.block()} * options_.page_size,
                                                  page_data(s, pid, f), static_cast<uint32_t>(options_.page_size),
                                                  false, slot, 0});
      CALICO_CHECK(pushed);  // free_slots has as many slots as the ring has entries
      ++submitted;
    }
  } catch (...) {
    submit_pushed();
    throw;
  }
  submit_pushed();
  return submitted;
}

template <class T>
void pool::PoolCore<T>::complete_async(AsyncLane& lane, uint64_t slot, int result, uint64_t now_ns) {
  const typename AsyncLane::PendingRead p = lane.pending[slot];
  lane.free_slots.push_back(static_cast<uint32_t>(slot));
  counters_.read_inflight_ns.fetch_add(now_ns - p.submitted_ns, std::memory_order_relaxed);
  if (p.space == nullptr) {  // abandoned by a drop (abandon_reads): the frame is free now
    free_list_.push(p.frame);
    return;
  }
  translation::Entry& e = *p.entry;
  CALICO_DCHECK(translation::load(e).state() == kIoPending && owns(p.space, e, p.pid));
  std::byte* frame = page_data(p.space, p.pid, p.frame);
  bool ok = result == static_cast<int>(options_.page_size) &&
            io::verify_page(frame, options_.page_size, p.pid) == io::PageCheck::kOk;
  if (ok) {
    meta_[p.frame].dirty.store(0, std::memory_order_relaxed);
    publish_owner(p.frame, p.pid, e);
    uint32_t seed = meta_[p.frame].version_seed.load(std::memory_order_relaxed);
    e.store(EntryWord::make(p.frame, seed, kUnlocked).raw, std::memory_order_release);
  } else {
    // The page stays evicted; a later pin reads it synchronously and reports the error.
    counters_.prefetch_failed.fetch_add(1, std::memory_order_relaxed);
    pool::undo_claim(e, translation::io_pending_word(static_cast<uint32_t>(&lane - lanes_.get())));
    release_ref(p.space, p.pid.block());
    forget(p.space, p.pid.block(), e);
    free_list_.push(p.frame);
  }
}

template <class T>
void pool::PoolCore<T>::reap_lane(AsyncLane& lane, bool wait) {
  if (lane.idle()) return;
  uint64_t now_ns = 0;  // read once per reap, at its first completion
  lane.ring->reap(
      [&](uint64_t slot, int res) {
        if (now_ns == 0) now_ns = pool::monotonic_ns();
        complete_async(lane, slot, res, now_ns);
      },
      wait);
  if (lane.idle()) {
    busy_lanes_.fetch_and(~(uint64_t{1} << (&lane - lanes_.get())), std::memory_order_relaxed);
  }
}

template <class T>
void pool::PoolCore<T>::reap_other_lanes(bool include_own) {
  uint64_t busy = busy_lanes_.load(std::memory_order_relaxed);
  if (!include_own) busy &= ~(uint64_t{1} << thread_lane());
  while (busy != 0) {
    const int i = __builtin_ctzll(busy);
    busy &= busy - 1;
    std::unique_lock lock(lanes_[i].mutex, std::try_to_lock);
    if (lock.owns_lock()) reap_lane(lanes_[i], /*wait=*/false);
  }
}

template <class T>
void pool::PoolCore<T>::help_async(const translation::Entry& e) {
  const EntryWord seen = translation::load(e);
  if (seen.state() != kIoPending) return;
  AsyncLane& lane = lanes_[seen.version()];
  std::lock_guard lock(lane.mutex);
  // The prefetcher installs the pending word and submits in one critical section of this
  // lane, so the read is in the ring now, or done (async_lane.h). The same word seen again
  // after a completion is a new read of the page, in this lane too: also in the ring.
  while (translation::load(e).raw == seen.raw) {
    CALICO_CHECK(!lane.idle());
    reap_lane(lane, /*wait=*/true);
  }
}

// A drop's reads that a failed ring still holds: they belong to no page now (the space's
// entries are reset next), and if the kernel completes one after all, its frame goes back to
// the free list (complete_async). Until then the frame stays out of the pool.
template <class T>
void pool::PoolCore<T>::abandon_reads(const Space* space) {
  for (uint32_t i = 0; i < pool::kMaxAsyncLanes; ++i) {
    AsyncLane& lane = lanes_[i];
    std::lock_guard lock(lane.mutex);
    if (lane.idle()) continue;
    std::vector<bool> free(lane.pending.size(), false);
    for (uint32_t slot : lane.free_slots) free[slot] = true;
    for (size_t slot = 0; slot < lane.pending.size(); ++slot) {
      if (!free[slot] && lane.pending[slot].space == space) lane.pending[slot].space = nullptr;
    }
  }
}

template <class T>
uint32_t pool::PoolCore<T>::drain_async() {
  uint32_t failed = 0;
  for (uint32_t i = 0; i < pool::kMaxAsyncLanes; ++i) {
    AsyncLane& lane = lanes_[i];
    std::lock_guard lock(lane.mutex);
    try {
      while (!lane.idle()) reap_lane(lane, /*wait=*/true);
    } catch (const Error&) {
      ++failed;  // the ring gave up: its reads stay the kernel's, their frames out of the pool
    }
  }
  return failed;
}

}  // namespace calico
