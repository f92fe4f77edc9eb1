// Frame hints ([LIPAH] 3.1, 4.1, 4.4): a reference carries (pid, frame hint), and a hinted
// access that finds pid in the hinted frame skips the translation: it touches the frame's
// metadata, the page's entry and the frame. The pool keeps, per frame, a pointer to its
// page's entry (frame_entries_, written by publish_owner / clear_owner). Compiled in only
// for policies with kFrameHints (lipah, array_hinted).
//
// read_optimistic_hinted: as read_optimistic(pid); validate(r) as usual. Why the hinted
// path cannot accept a page other than pid (frames are reused, so think ABA):
//   The reader loads, in order: (1) meta[f].owner == pid (a filter only), (2) e = the
//   frame's entry pointer, (3) w = *e with w.frame() == f and not exclusive, (4) meta[f].owner
//   == pid again; later (5) validate(r): *e still shows w's frame and version.
//   Case e is pid's entry: (3) says pid was in f at (3), and (5) that it stayed there,
//   unmodified, until (5) (an eviction zeroes e, and a reload into f starts above w's
//   version: versions shown for one frame only grow, entry.h "Version ABA").
//   Case e is the entry of another page q (a stale pointer: q left f, or f changed hands
//   between (1) and (3)): (3) says q was in f at (3). If (5) succeeds, q stayed in f from
//   (3) to (5) (same argument), so no evictor of q took e's latch in between (it would have
//   left e exclusive, zero, or re-versioned), so meta[f].owner was q throughout: a loader
//   stores owner before publishing e (release; (3) acquires it), and the evictor clears it
//   only under e's exclusive latch (a load at (4) that sees the clear, or any later owner,
//   acquires that latch's CAS too, so (5) sees e latched or changed). Then (4) read q, not
//   pid: contradiction. Without (4) the hinted read could return q's bytes as pid's.
//   (1) alone is not enough: f may pass from pid to q between (1) and (2).
//
// The hinted pins: latch e (reached as above) while it shows f, then check meta[f].owner ==
// pid under the latch. A latched page cannot leave its frame, so the owner seen under the
// latch is the page of e; if it is not pid, the latch is released (unchanged, no version
// bump) and the access falls back.
#pragma once

#include "pool/access.h"

namespace calico {

template <class T>
inline OptimisticRead pool::PoolCore<T>::read_optimistic_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  const FrameId f = *hint;
  if (translation::Entry* e = hinted_entry(pid, f)) [[likely]] {   // (1), (2)
    translation::EntryWord w = translation::load(*e);              // (3)
    if (w.frame() == f && w.state() != translation::kExclusive && owned_by(f, pid)) [[likely]] {  // (4)
      if (w.state() == translation::kMarked) [[unlikely]] {
        if (!translation::try_cas(*e, w, w.with_state(translation::kUnlocked))) {  // CLOCK's second chance
          after_failed_cas(pid, *e);
        }
      }
      count_hint(true);
      return OptimisticRead{frames_.frame(f), e, w, pid};
    }
  }
  count_hint(false);
  OptimisticRead r = read_optimistic(pid);
  *hint = r.seen.frame();
  return r;
}

template <class T>
template <bool kExclusiveLatch>
inline translation::Entry* pool::PoolCore<T>::latch_hinted(PageId pid, FrameId f, translation::EntryWord* held)
  requires kFrameHints
{
  translation::Entry* e = hinted_entry(pid, f);
  if (e == nullptr) return nullptr;
  for (int attempt = 0; attempt < kTryLatchAttempts; ++attempt) {
    translation::EntryWord w = translation::load(*e);
    if (w.frame() != f) return nullptr;
    if (!(kExclusiveLatch ? translation::try_lock_exclusive(*e, w) : translation::try_lock_shared(*e, w))) {
      after_failed_cas(pid, *e);
      continue;
    }
    if (owned_by(f, pid)) [[likely]] {
      *held = kExclusiveLatch ? w.with_state(translation::kExclusive) : w;
      return e;
    }
    // e is another page's entry: give its latch back, unchanged (no version bump).
    if constexpr (kExclusiveLatch) {
      translation::unlock_exclusive(*e, w.with_state(translation::kExclusive), /*bump_version=*/false);
    } else {
      translation::unlock_shared(*e);
    }
    return nullptr;
  }
  return nullptr;
}

template <class T>
inline SharedGuard pool::PoolCore<T>::pin_shared_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  translation::EntryWord held;
  if (translation::Entry* e = latch_hinted<false>(pid, *hint, &held)) [[likely]] {
    count_hint(true);
    return SharedGuard(e, frames_.frame(*hint), pid);
  }
  count_hint(false);
  return pin_shared_at(pid, hint);
}

template <class T>
inline ExclusiveGuard pool::PoolCore<T>::pin_exclusive_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  translation::EntryWord held;
  if (translation::Entry* e = latch_hinted<true>(pid, *hint, &held)) [[likely]] {
    count_hint(true);
    return ExclusiveGuard(e, held, frames_.frame(*hint), &meta_[*hint], pid);
  }
  count_hint(false);
  return pin_exclusive_at(pid, hint);
}

}  // namespace calico
