// Sparse-group counters (translation array_sparse, sparse_array.h): the hole-punch counter of
// hole_punch_counter.h with two more flag bits, for groups whose resident entries may live in
// a side table instead of the array page.
//
//   bit 31      kPunchLock: held while the array page of the group is being punched
//   bit 30      kSparse: the group's entries are in the side table; its array page is
//               punched and all zero, and nobody writes it
//   bit 29      kMoving: a move between the representations is running (one mover)
//   bits 0..28  count: non-zero entries of the group in its current representation + faults,
//               allocations and prefetches in progress in the group (references)
//
// Invariant (I1, both representations): every non-zero entry of the group, in the array or
// in the side table, is covered by one count, taken BEFORE the first write into the entry and
// given back only AFTER it is zero again. A reference is taken for one representation
// (acquire returns which) and the taker writes only into that representation's entry; a move
// changes the representation only while it holds kMoving, which no acquirer gets past, and
// only when every reference is a resident entry the mover holds latched (count == latched).
// So an array page with kSparse set is written by nobody: a punch loses nothing, and no
// write-fault maps it back in.
//
// Protocol:
//   acquire:    wait while kPunchLock or kMoving is set; CAS count -> count + 1; returns
//               whether kSparse was set (the representation the reference covers).
//   release:    CAS count -> count - 1, flags kept. The last reference of a dense group
//               (count 1, no flag) punches the array page as hole_punch_counter.h does; the
//               last one of a sparse group leaves it sparse and empty (its array page is
//               already punched): a group that emptied out of the side table is cold, and
//               the few pages that fault back into it later (a read-latest tail, scattered
//               Zipf hits) go to the side table instead of bringing back a 4 KB page for
//               each; once dense_at of them are resident, a fault moves the group back.
//               While kMoving is set the release only counts down: the mover then does what
//               the last release would.
//   begin_move: CAS to kMoving from a quiet word of the wanted representation and count.
//   end_move:   the mover's store of the new word; an aborted move whose count fell to 0
//               meanwhile punches (dense) or leaves the group sparse and empty (sparse).
// Movers never wait while holding kMoving (they only try latches), so acquirers' waits end.
#pragma once

#include <atomic>
#include <cstdint>

#include "calico/checks.h"
#include "translation/array/hole_punch_counter.h"

namespace calico::translation {

inline constexpr uint32_t kGroupSparse = 1u << 30;
inline constexpr uint32_t kGroupMoving = 1u << 29;
inline constexpr uint32_t kGroupCountMask = kGroupMoving - 1;

inline uint32_t group_count_of(uint32_t word) { return word & kGroupCountMask; }

// Returns true when the reference covers the side table (the group is sparse).
inline bool acquire_group_ref(PunchCounter& c) {
  Backoff backoff;
  uint32_t v = c.load(std::memory_order_acquire);
  for (;;) {
    if (v & (kPunchLock | kGroupMoving)) {
      backoff.pause();
      v = c.load(std::memory_order_acquire);
      continue;
    }
    CALICO_DCHECK(group_count_of(v) < kGroupCountMask);
    if (c.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return (v & kGroupSparse) != 0;
    }
  }
}

// What a release or an aborted move did beyond counting down.
enum class GroupRelease { kCounted, kPunched };

// Gives one reference back; punch() runs under kPunchLock when it was a dense group's last.
// Pre: the caller holds a reference and its entry is zero.
template <class PunchFn>
GroupRelease release_group_ref(PunchCounter& c, PunchFn&& punch) {
  uint32_t v = c.load(std::memory_order_acquire);
  for (;;) {
    CALICO_CHECK((v & kPunchLock) == 0 && group_count_of(v) > 0);
    if (v == 1) {  // a dense group's last reference, no move running
      if (c.compare_exchange_weak(v, kPunchLock, std::memory_order_acq_rel, std::memory_order_acquire)) {
        punch();
        c.store(0, std::memory_order_release);
        return GroupRelease::kPunched;
      }
    } else if (c.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return GroupRelease::kCounted;
    }
  }
}

// Sets kMoving if the group is quiet (no flag but kSparse == `sparse`) and its count is in
// [min_count, max_count]; *count gets that count. Never waits.
inline bool begin_group_move(PunchCounter& c, bool sparse, uint32_t min_count, uint32_t max_count, uint32_t* count) {
  uint32_t v = c.load(std::memory_order_acquire);
  const uint32_t flags = sparse ? kGroupSparse : 0;
  if ((v & ~kGroupCountMask) != flags || group_count_of(v) < min_count || group_count_of(v) > max_count) return false;
  *count = group_count_of(v);
  return c.compare_exchange_strong(v, v | kGroupMoving, std::memory_order_acq_rel, std::memory_order_acquire);
}

// Ends a move the caller began: the group is now `sparse` with the same count (committed).
// Pre: kMoving held, count == the entries the mover moved (no reference can come or go).
inline void commit_group_move(PunchCounter& c, bool sparse) {
  uint32_t v = c.load(std::memory_order_acquire);
  CALICO_CHECK((v & kGroupMoving) && group_count_of(v) > 0);
  c.store(group_count_of(v) | (sparse ? kGroupSparse : 0), std::memory_order_release);
}

// Ends a move the caller began without moving anything. Releases that came meanwhile only
// counted down; if they left no reference, does what the last one would have done (punch()
// for a dense group; a sparse one stays sparse and empty).
template <class PunchFn>
GroupRelease abort_group_move(PunchCounter& c, PunchFn&& punch) {
  uint32_t v = c.load(std::memory_order_acquire);
  for (;;) {
    CALICO_CHECK(v & kGroupMoving);
    if (group_count_of(v) == 0) {
      // No reference: no acquirer gets past kMoving, so the group is ours until the store.
      const bool dense = (v & kGroupSparse) == 0;
      if (dense) punch();
      c.store(v & kGroupSparse, std::memory_order_release);
      return dense ? GroupRelease::kPunched : GroupRelease::kCounted;
    }
    if (c.compare_exchange_weak(v, v & ~kGroupMoving, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return GroupRelease::kCounted;
    }
  }
}

// The array page of a dense group with no reference, or of a sparse group (written by
// nobody, I1), punched again after a failing CAS may have backed it (repunch_punch_page).
// A sparse group is punched under kMoving (no mover runs, references keep coming and going
// in the side table meanwhile, and acquirers wait); a quiet dense group at 0 under
// kPunchLock. Returns true if it punched; never waits.
template <class PunchFn>
bool repunch_group_page(PunchCounter& c, PunchFn&& punch) {
  uint32_t v = c.load(std::memory_order_acquire);
  if (v == 0) return repunch_punch_page(c, punch);
  if ((v & ~kGroupCountMask) != kGroupSparse) return false;  // dense and referenced, or busy
  if (!c.compare_exchange_strong(v, v | kGroupMoving, std::memory_order_acq_rel, std::memory_order_acquire)) {
    return false;
  }
  punch();
  abort_group_move(c, [] {});  // sparse: only clears kMoving, whatever the count is now
  return true;
}

}  // namespace calico::translation
