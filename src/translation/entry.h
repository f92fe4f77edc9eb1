// Translation entry: one 64-bit atomic word per page, the whole of Calico's translation.
//
//   63            32 31              8 7        0
//  +----------------+-----------------+----------+
//  |  frame id (32) |   version (24)  | state (8)|
//  +----------------+-----------------+----------+
//
// Entry points: EntryWord (decode/encode), and the transitions below, which are the only
// writes any thread makes to an entry.
//
// States (frame == 0 means "not resident"; all-zero means evicted):
//   {0, 0, 0}            kEvicted: no frame. The reserved array is all-zero, so every page
//                        starts here without initialisation; eviction writes zero back.
//   {0, 0, kExclusive}   a synchronous fault owns the page and is reading it.
//   {0, 0, kIoPending}   an asynchronous (prefetch) read is in flight.
//   {F, v, 0}            resident, unlocked.
//   {F, v, 1..kMaxShared}resident, that many shared pins.
//   {F, v, kExclusive}   resident, one exclusive latch (a writer, the evictor or flush).
//   {F, v, kMarked}      resident, unlocked, and chosen by CLOCK: any access that sees the
//                        mark clears it (second chance); the evictor evicts marked pages.
//                        (vmcache's scheme: the reference bit lives in the entry, so a hit
//                        touches no other cache line.)
//
// Transitions (who / how):
//   evicted -> loading       faulter / CAS 0 -> {0,0,kExclusive}  (after taking a hole-punch
//                            reservation, see hole_punch_counter.h)
//   evicted -> io pending    prefetcher / CAS 0 -> {0,0,kIoPending} (reservation likewise)
//   loading|io -> resident   the loader / store {F, seed(F), 0}
//   loading|io -> evicted    the loader on I/O failure / store 0
//   unlocked|marked -> shared+1, shared n -> n+1     reader / CAS
//   shared n -> n-1          reader / fetch_sub(1)
//   unlocked|marked -> exclusive                     writer, evictor / CAS
//   exclusive -> unlocked    writer / store {F, v+1, 0}: every exclusive unlock that may
//                            have changed the page bumps the version
//   exclusive -> evicted     evictor / store 0
//   unlocked -> marked       evictor / CAS;  marked -> unlocked: any accessor / CAS
//
// Version ABA: an evicted entry is all-zero, so the version cannot survive eviction in the
// entry itself. Each frame keeps a version seed in its metadata: when a page leaves frame F
// with version v, F's seed becomes v + 1, and the next page loaded into F starts at F's seed.
// So the versions an entry shows while pointing at frame F only grow (mod 2^24), and an
// optimistic reader holding {F, v} cannot see {F, v} again after an evict-and-reload into
// the same frame. Wrap-around needs 2^24 exclusive unlocks of one frame during one
// optimistic read; we accept that, as LeanStore and vmcache do with their version widths.
#pragma once

#include <atomic>
#include <cstdint>

#include "calico/page_id.h"

namespace calico::translation {

using Entry = std::atomic<uint64_t>;
static_assert(Entry::is_always_lock_free);

inline constexpr uint8_t kUnlocked = 0;
inline constexpr uint8_t kMaxShared = 251;
inline constexpr uint8_t kExclusive = 252;
inline constexpr uint8_t kIoPending = 253;
inline constexpr uint8_t kMarked = 254;
inline constexpr uint32_t kVersionMask = (1u << 24) - 1;

struct EntryWord {
  uint64_t raw = 0;

  static constexpr EntryWord make(FrameId frame, uint32_t version, uint8_t state) {
    return EntryWord{(static_cast<uint64_t>(frame) << 32) |
                     (static_cast<uint64_t>(version & kVersionMask) << 8) | state};
  }
  constexpr FrameId frame() const { return static_cast<FrameId>(raw >> 32); }
  constexpr uint32_t version() const { return static_cast<uint32_t>(raw >> 8) & kVersionMask; }
  constexpr uint8_t state() const { return static_cast<uint8_t>(raw); }

  constexpr bool evicted() const { return raw == 0; }
  constexpr bool resident() const { return frame() != kInvalidFrame; }
  constexpr bool shared() const { return state() >= 1 && state() <= kMaxShared; }
  // Unlocked or marked: an exclusive latch or a new shared pin may be taken.
  constexpr bool unlatched() const { return state() == kUnlocked || state() == kMarked; }
  // What optimistic readers validate: frame and version, not the shared count or the mark.
  constexpr uint64_t frame_and_version() const { return raw & ~uint64_t{0xFF}; }

  constexpr EntryWord with_state(uint8_t s) const { return EntryWord{(raw & ~uint64_t{0xFF}) | s}; }
  constexpr EntryWord next_version_unlocked() const {
    return make(frame(), version() + 1, kUnlocked);
  }
};
static_assert(sizeof(EntryWord) == 8);
static_assert(EntryWord::make(0, 0, 0).raw == 0, "all-zero must mean evicted");
static_assert(EntryWord::make(7, 5, kMarked).frame() == 7);
static_assert(EntryWord::make(7, 5, kMarked).version() == 5);
static_assert(EntryWord::make(7, kVersionMask + 3, 0).version() == 2, "versions wrap at 2^24");
static_assert(EntryWord::make(0xFFFFFFFFu, kVersionMask, kMarked).frame() == 0xFFFFFFFFu);

inline constexpr EntryWord kLoadingWord = EntryWord::make(kInvalidFrame, 0, kExclusive);
inline constexpr EntryWord kIoPendingWord = EntryWord::make(kInvalidFrame, 0, kIoPending);

inline EntryWord load(const Entry& e, std::memory_order mo = std::memory_order_acquire) {
  return EntryWord{e.load(mo)};
}

// CAS helpers; each returns true when this thread made the transition. `expected` is the
// word the caller observed.
inline bool try_cas(Entry& e, EntryWord expected, EntryWord desired) {
  uint64_t exp = expected.raw;
  return e.compare_exchange_strong(exp, desired.raw, std::memory_order_acq_rel,
                                   std::memory_order_relaxed);
}

// Shared pin on a resident page: unlocked/marked/shared(<max) -> shared+1.
inline bool try_lock_shared(Entry& e, EntryWord seen) {
  if (!seen.resident()) return false;
  uint8_t s = seen.state();
  uint8_t next;
  if (s == kUnlocked || s == kMarked) {
    next = 1;
  } else if (s >= 1 && s < kMaxShared) {
    next = s + 1;
  } else {
    return false;
  }
  return try_cas(e, seen, seen.with_state(next));
}

// Pre: this thread holds one shared pin. The state byte is >= 1, so subtracting 1 from the
// word never borrows from the version.
inline void unlock_shared(Entry& e) { e.fetch_sub(1, std::memory_order_release); }

// Exclusive latch on a resident, unlatched page.
inline bool try_lock_exclusive(Entry& e, EntryWord seen) {
  return seen.resident() && seen.unlatched() && try_cas(e, seen, seen.with_state(kExclusive));
}

// Pre: this thread holds the exclusive latch; `held` is the word it installed.
inline void unlock_exclusive(Entry& e, EntryWord held, bool bump_version) {
  EntryWord next = bump_version ? held.next_version_unlocked() : held.with_state(kUnlocked);
  e.store(next.raw, std::memory_order_release);
}

}  // namespace calico::translation
