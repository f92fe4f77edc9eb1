// PoolCore: one page access, the hit paths. Every access resolves the page's space (the
// thread's path cache: one compare), loads the page's 64-bit entry word (translation/entry.h)
// and either latches it by CAS (pins) or reads the frame and validates the word afterwards
// (optimistic reads, no atomic write). Anything else (evicted, latched, loading) goes to
// retry() -> wait_or_fault() in fault.h. The calls marked "feature" compile to nothing for
// policies without that capability (calico/translation_policy.h); features/ has them.
#pragma once

#include <atomic>
#include <cstddef>
#include <type_traits>

#include "pool/policy_hooks.h"
#include "pool/pool_core.h"

namespace calico {

// --- the steps every access takes ---------------------------------------------------------

// True when the thread's path cache c resolves space id of this pool: same pool, same
// space, and no space created or dropped since it was filled (the directory's epoch).
template <class T>
inline bool pool::PoolCore<T>::path_cached(const translation::PathCache& c, SpaceId id) const {
  return c.pool_uid == uid_ && c.space == id && c.epoch == directory_.epoch();
}

// Hot path: the thread's path cache, else the directory (throws kUnknownSpace).
template <class T>
inline typename pool::PoolCore<T>::Resolved pool::PoolCore<T>::resolve(SpaceId id) {
  auto& c = translation::tls_path_cache;
  if (path_cached(c, id)) [[likely]] {
    return {c.entries, c.capacity, static_cast<Space*>(c.owner)};
  }
  return resolve_slow(id);
}

// pid's entry (inserted if the table creates entries on first use), counting the access.
// Errors: kUnknownSpace, kPageOutOfRange.
template <class T>
inline translation::Entry& pool::PoolCore<T>::entry_for(PageId pid, Space** space_out) {
  Resolved r = resolve(pid.space());
  if (pid.block() >= r.capacity) [[unlikely]] throw_out_of_range(pid);
  *space_out = r.space;
  std::atomic<uint64_t>* accesses = translation::tls_path_cache.accesses;
  accesses->store(accesses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if constexpr (T::kFlatEntries) {
    return r.entries[pid.block()];
  } else {
    return r.space->table.entry(pid.block());
  }
}

// The access loops' slow path: the entry to retry with after wait_or_fault. Recycling
// tables first check that e is still pid's (entry.h R4): a retired entry, or one recycled
// for another page, is never waited on (waiting on another page's latch could deadlock
// against its holder); pid is looked up again instead. The owner is read after `w`
// (acquire), so it is at least as new as the residency `w` belongs to. For the other
// tables this is wait_or_fault alone.
template <class T>
inline translation::Entry* pool::PoolCore<T>::retry(Space* space, PageId pid, translation::Entry* e, translation::EntryWord w, int* spins) {
  if (w.resident()) after_failed_cas(space, pid.block(), *e);  // the caller's latch CAS failed
  if constexpr (kRecyclesEntries) {
    if (w.state() == translation::kGone || !owns(space, *e, pid)) return &space->table.entry(pid.block());
  }
  if constexpr (kSparseGroups) {
    // A zero or retired entry may be one the group moved away from: look pid up again
    // (after any move in progress), and fault only through the entry it has now.
    if (w.evicted() || w.state() == translation::kGone || !owns(space, *e, pid)) {
      translation::Entry* now = &space->table.entry(pid.block());
      if (now != e) return now;
    }
  }
  wait_or_fault(space, pid, *e, w, spins);
  return e;
}

// Called when a CAS on an entry word the caller loaded resident has failed. If the word
// reads zero now, the page may have been evicted and its page of entries punched between
// the load and the CAS, and a failing CAS writes too (x86's LOCK CMPXCHG), so the kernel
// backed the page again, all zero and counted by nobody. Tables that punch (the arrays)
// punch it again if nothing references it (translation_array.h, repunch); for the others
// this is nothing. Off the hit path: only after a failed CAS.
template <class T>
inline void pool::PoolCore<T>::after_failed_cas(Space* space, BlockId block, const translation::Entry& e) {
  if constexpr (requires { space->table.repunch(block); }) {
    if constexpr (kSparseGroups) {
      if (space->table.is_side(e)) return;  // side entries are never punched
    }
    if (translation::load(e, std::memory_order_relaxed).evicted() && space->table.repunch(block)) {
      counters_.punches.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// The same, for callers that hold a frame's entry pointer rather than the space (frame hints).
template <class T>
inline void pool::PoolCore<T>::after_failed_cas(PageId pid, const translation::Entry& e) {
  if constexpr (requires(Space* space) { space->table.repunch(pid.block()); }) {
    if (Space* space = live_space(pid.space())) after_failed_cas(space, pid.block(), e);
  }
}

// --- the accesses --------------------------------------------------------------------------

template <class T>
inline SharedGuard pool::PoolCore<T>::pin_shared(PageId pid) {
  FrameId frame;
  return pin_shared_at(pid, &frame);
}

template <class T>
inline SharedGuard pool::PoolCore<T>::pin_shared_at(PageId pid, FrameId* frame) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (in_far_tier(w.frame())) [[unlikely]] {
      if (far_hit(space, pid, *e, w, /*write=*/false)) continue;
    }
    if (translation::try_lock_shared(*e, w)) [[likely]] {
      if (owns(space, *e, pid)) [[likely]] {
        *frame = w.frame();
        return SharedGuard(e, page_data(space, pid, w.frame()), pid);
      }
      translation::unlock_shared(*e);  // another page's (recycled) entry: look pid up again
      e = &space->table.entry(pid.block());
      continue;
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
inline ExclusiveGuard pool::PoolCore<T>::pin_exclusive(PageId pid) {
  FrameId frame;
  return pin_exclusive_at(pid, &frame);
}

template <class T>
inline ExclusiveGuard pool::PoolCore<T>::pin_exclusive_at(PageId pid, FrameId* frame) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (in_far_tier(w.frame())) [[unlikely]] {
      if (far_hit(space, pid, *e, w, /*write=*/true)) continue;
    }
    if (translation::try_lock_exclusive(*e, w)) [[likely]] {
      translation::EntryWord held = w.with_state(translation::kExclusive);
      if (owns(space, *e, pid)) [[likely]] {
        *frame = w.frame();
        return ExclusiveGuard(e, held, page_data(space, pid, w.frame()), &meta_[w.frame()], pid);
      }
      // Another page's (recycled) entry: give its latch back unchanged, look pid up again.
      translation::unlock_exclusive(*e, held, /*bump_version=*/false);
      e = &space->table.entry(pid.block());
      continue;
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
inline ExclusiveGuard pool::PoolCore<T>::try_pin_exclusive(PageId pid) {
  Space* space;
  translation::Entry* e = find_entry_for(pid, &space);  // a page without an entry is evicted
  if (e == nullptr) return ExclusiveGuard();
  // A failed CAS means the word changed (a pin, CLOCK's mark): look again, a bounded number
  // of times; a latched, pinned, evicted or loading page gives up at once.
  for (int attempt = 0; attempt < kTryLatchAttempts; ++attempt) {
    translation::EntryWord w = translation::load(*e);
    if (!w.resident() || !w.unlatched()) break;
    if (translation::try_lock_exclusive(*e, w)) {
      translation::EntryWord held = w.with_state(translation::kExclusive);
      if (!owns(space, *e, pid)) [[unlikely]] {
        // Recycled for another page: pid was evicted meanwhile. Give the latch back unchanged.
        translation::unlock_exclusive(*e, held, /*bump_version=*/false);
        break;
      }
      if (in_far_tier(w.frame())) [[unlikely]] charge_far_access();  // never promotes: it never waits
      return ExclusiveGuard(e, held, page_data(space, pid, w.frame()), &meta_[w.frame()], pid);
    }
    after_failed_cas(space, pid.block(), *e);
  }
  return ExclusiveGuard();
}


template <class T>
inline OptimisticRead pool::PoolCore<T>::read_optimistic(PageId pid, uint32_t touch_offset) {
  if constexpr (T::kDirect) {
    // The physical limit: no lookup, no residency check (see DirectTranslation).
    return OptimisticRead{frames_.frame(static_cast<FrameId>(pid.block()) + 1), &direct_entry_,
                          translation::EntryWord{0}, pid};
  }
  OptimisticRead r;
  if (read_fast(pid, &r, touch_offset)) [[likely]] return r;
  return read_optimistic_slow(pid);
}

template <class T>
[[gnu::always_inline]] inline bool pool::PoolCore<T>::read_fast(PageId pid, OptimisticRead* r,
                                                                uint32_t touch_offset) {
  if constexpr (translation::Predicting<T>) {
    (void)pid, (void)r, (void)touch_offset;
    return false;  // every access may promote: the general loop
  } else {
    auto& c = translation::tls_path_cache;
    if (!path_cached(c, pid.space())) [[unlikely]] return false;
    if (pid.block() >= c.capacity) [[unlikely]] return false;
    Space* space = static_cast<Space*>(c.owner);
    if constexpr (!T::kPagesInPlace) {
      // Frame prediction (PrediCache's idea on the array): while the entry loads, start the
      // frame the last reads' frame-block difference predicts, so that on a hit the entry
      // and the page arrive together instead of one after the other. Only a prefetch (which
      // never faults, even past the arena): a wrong guess costs a cache line, never
      // correctness. The line prefetched is the one the caller reads first.
      if (c.delta_stable) __builtin_prefetch(frames_.frame(pid.block() + c.frame_delta) + touch_offset);
    }
    translation::Entry* e;
    if constexpr (T::kFlatEntries) {
      e = &c.entries[pid.block()];
    } else {
      e = &space->table.entry(pid.block());
    }
    const translation::EntryWord w = translation::load(*e);  // acquire: then the owner (entry.h R5)
    // Resident, unlatched and unmarked (a marked page's read clears the mark: the slow path).
    // Tiered pools: a page in the far tier takes the slow path (charged, maybe promoted).
    // One compare of the frame id against fast_last_ (the arena's last frame without a far
    // tier, so never true then); compiled away for policies that cannot take a far tier.
    // Flat entries are their block's (array_sparse: a non-zero array word is the entry).
    if (!w.resident() || w.state() != translation::kUnlocked || (!T::kFlatEntries && !owns(space, *e, pid)) ||
        in_far_tier(w.frame()))
        [[unlikely]] {
      return false;
    }
    std::atomic<uint64_t>* accesses = c.accesses;
    accesses->store(accesses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if constexpr (!T::kPagesInPlace) {
      const uint32_t delta = w.frame() - pid.block();
      if (delta != c.frame_delta || !c.delta_stable) [[unlikely]] {
        c.delta_stable = delta == c.frame_delta;
        c.frame_delta = delta;
      }
    }
    *r = OptimisticRead{page_data(space, pid, w.frame()), e, w, pid};
    return true;
  }
}

template <class T>
[[gnu::noinline]] OptimisticRead pool::PoolCore<T>::read_optimistic_slow(PageId pid) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);  // acquire: then the owner (entry.h R5)
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (w.resident() && w.state() != translation::kExclusive) [[likely]] {
      if (!owns(space, *e, pid)) [[unlikely]] {
        e = &space->table.entry(pid.block());  // recycled for another page: look up again
        continue;
      }
      if (in_far_tier(w.frame())) [[unlikely]] {
        if (far_hit(space, pid, *e, w, /*write=*/false)) continue;
      }
      if (w.state() == translation::kMarked) [[unlikely]] {
        // Second chance: an access clears CLOCK's mark (the only write, and a rare one).
        if (!translation::try_cas(*e, w, w.with_state(translation::kUnlocked))) after_failed_cas(space, pid.block(), *e);
      }
      return OptimisticRead{page_data(space, pid, w.frame()), e, w, pid};
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
template <class Fn>
[[gnu::always_inline]] inline auto pool::PoolCore<T>::optimistic_read(PageId pid, Fn&& fn, uint32_t touch_offset)
    -> std::invoke_result_t<Fn&, const std::byte*> {
  using R = std::invoke_result_t<Fn&, const std::byte*>;
  if constexpr (!T::kDirect) {
    // The fast path inline (resident, unlatched, one attempt); the retry loop out of line.
    OptimisticRead r;
    if (read_fast(pid, &r, touch_offset)) [[likely]] {
      if constexpr (std::is_void_v<R>) {
        fn(r.data);
        if (validate(r)) [[likely]] return;
      } else {
        R result = fn(r.data);
        if (validate(r)) [[likely]] return result;
      }
      return optimistic_read_slow(pid, fn, 1);  // that was the first of kOptimisticAttempts
    }
  }
  return optimistic_read_slow(pid, fn, 0);
}

template <class T>
template <class Fn>
[[gnu::noinline]] auto pool::PoolCore<T>::optimistic_read_slow(PageId pid, Fn& fn, int attempts_made)
    -> std::invoke_result_t<Fn&, const std::byte*> {
  using R = std::invoke_result_t<Fn&, const std::byte*>;
  for (int attempt = attempts_made; attempt < kOptimisticAttempts; ++attempt) {
    OptimisticRead r = read_optimistic(pid);
    if constexpr (std::is_void_v<R>) {
      fn(r.data);
      if (validate(r)) return;
    } else {
      R result = fn(r.data);
      if (validate(r)) return result;
    }
  }
  // Repeated conflicts: stop wasting work and read under a shared pin (as pgvector on Calico).
  counters_.optimistic_fallbacks.fetch_add(1, std::memory_order_relaxed);
  SharedGuard g = pin_shared(pid);
  return fn(g.data());
}

}  // namespace calico
