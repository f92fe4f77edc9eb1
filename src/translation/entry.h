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
//   {0, L, kIoPending}   an asynchronous (prefetch) read is in flight in the pool's async
//                        lane L (pool/async_lane.h): whoever needs the page completes
//                        that lane's reads.
//   {F, v, 0}            resident, unlocked.
//   {F, v, 1..kMaxShared}resident, that many shared pins.
//   {F, v, kExclusive}   resident, one exclusive latch (a writer, the evictor or flush).
//   {F, v, kMarked}      resident, unlocked, and chosen by CLOCK: any access that sees the
//                        mark clears it (second chance); the evictor evicts marked pages.
//                        (vmcache's scheme: the reference bit lives in the entry, so a hit
//                        touches no other cache line.)
//   {0, 0, kGone}        recycling tables only (OwnedEntry below): the entry was removed from
//                        its table and belongs to no page. Never latchable, never readable:
//                        whoever sees it looks the page up again.
//
// Transitions (who / how):
//   evicted -> loading       faulter / CAS 0 -> {0,0,kExclusive}  (after taking a hole-punch
//                            reservation, see hole_punch_counter.h)
//   evicted -> io pending    prefetcher / CAS 0 -> {0,L,kIoPending} (reservation likewise)
//   loading|io -> resident   the loader / store {F, seed(F), 0}
//   loading|io -> evicted    the loader on I/O failure / store 0
//   unlocked|marked -> shared+1, shared n -> n+1     reader / CAS
//   shared n -> n-1          reader / fetch_sub(1)
//   unlocked|marked -> exclusive                     writer, evictor / CAS
//   exclusive -> unlocked    writer / store {F, v+1, 0}: every exclusive unlock that may
//                            have changed the page bumps the version
//   exclusive -> evicted     evictor / store 0
//   unlocked -> marked       evictor / CAS;  marked -> unlocked: any accessor / CAS
//   evicted -> gone          a recycling table retiring the entry / CAS 0 -> kGoneWord, under
//                            the table's exclusive partition latch, in the same critical
//                            section that removes it from the map (OwnedEntry)
//   gone -> evicted          the table recycling it for another block / store 0, after its
//                            owner is set and under the same latch (OwnedEntry)
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
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "calico/page_id.h"

namespace calico::translation {

using Entry = std::atomic<uint64_t>;
static_assert(Entry::is_always_lock_free);

inline constexpr uint8_t kUnlocked = 0;
inline constexpr uint8_t kMaxShared = 251;
inline constexpr uint8_t kExclusive = 252;
inline constexpr uint8_t kIoPending = 253;
inline constexpr uint8_t kMarked = 254;
inline constexpr uint8_t kGone = 255;
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
// A read in flight in async lane `lane`; the lane sits in the version bits, unused while no
// frame is attached.
constexpr EntryWord io_pending_word(uint32_t lane) { return EntryWord::make(kInvalidFrame, lane, kIoPending); }
inline constexpr EntryWord kGoneWord = EntryWord::make(kInvalidFrame, 0, kGone);
static_assert(!kGoneWord.evicted() && !kGoneWord.resident() && !kGoneWord.unlatched() && !kGoneWord.shared(),
              "gone is neither evicted (no fault CASes it) nor latchable nor readable");

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

// Gives back a claim this thread made by a CAS out of 0 (kLoadingWord for a fault or an
// allocation, io_pending_word for a prefetch): 0 again only if the word is still the one it
// installed. Returns false, and writes nothing, if it is not: a thread only ever undoes its
// own write. (Entries of recycling tables, side entries included, change owner: a plain store
// of 0 by a thread whose claim landed on an entry recycled for another block wipes that
// block's entry if anyone wrote it since, pool/README.md S2 and R4.)
inline bool release_claim(Entry& e, EntryWord installed) { return try_cas(e, installed, EntryWord{0}); }

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

// --- Recycled entries: tables that delete a page's entry when it leaves the pool ------------
//
// OwnedEntry is the entry word plus the block it belongs to now. The hash tables of
// partitioned_table.h (hash_chained, hash_open, and lipah over hash_open) remove an entry from
// their map once its page is evicted and give the same object to another block later. Entry
// memory is type-stable: it is recycled but never freed while the table lives, so a thread
// holding a stale Entry* still reads a valid atomic, and the owner tells it whether that
// entry still belongs to its page. Rules (the pool's side is in pool/README.md, "Recycled
// entries"):
//  R1 owner changes only while the word is kGone, under the table's exclusive latch.
//  R2 Retire: under that latch, CAS 0 -> kGone and remove the entry from the map. Only a zero
//     (evicted) entry is retired: nobody holds a latch on it, and a concurrent CAS out of 0
//     (a fault or a prefetch) and the retire's CAS exclude each other.
//  R3 Recycle: under that latch, owner := block + 1 (release), then word := 0 (release), and
//     the map holds it before the latch is released. So an entry in a map is never gone and
//     is owned by its key; a gone entry is in no map.
//  R4 Whoever got pid's entry from the table and then latches it (a CAS out of 0, unlatched or
//     shared) checks the owner after the CAS. A latched entry cannot be retired (R2 needs
//     zero), so the owner is fixed while the latch is held (R1); the CAS reads a word stored
//     after the owner (R3), so it sees the current owner. On a mismatch it undoes its CAS,
//     with no version bump, and looks pid up again; so does whoever sees kGone.
//  R5 An optimistic reader loads the word w = {F, v} (acquire), then the owner (acquire), and
//     validate() later re-reads the word. If validate sees {F, v} again, the entry stayed in
//     one residency from the first load to the validation: {F, v} is shown by at most one
//     residency ever ("Version ABA" above: a page leaving F with v sets F's seed to v + 1),
//     and a residency that ends (store 0) never comes back. The owner is fixed during a
//     residency (R1), so the owner read in between is that residency's page. An owner newer
//     than w's residency is stored (release) after the kGone that ended it, so a reader that
//     loaded it (acquire) cannot see {F, v} at validation.
// ABA across pages: an entry recycled for page B and loaded into the frame F that page A held
// shows {F, v'} with v' > every version A showed in F (F's seed), so a reader of A holding
// {F, v} fails validation, and a latcher of A's stale pointer fails the owner check (R4).
struct OwnedEntry {
  Entry word{0};
  std::atomic<uint64_t> owner{0};  // block + 1 of the page it belongs to; 0 = never used
};
static_assert(sizeof(OwnedEntry) == 16 && std::is_standard_layout_v<OwnedEntry> && offsetof(OwnedEntry, word) == 0,
              "an Entry* handed out by a recycling table points at the first member of an OwnedEntry");

inline constexpr uint64_t owner_key(BlockId block) { return uint64_t{block} + 1; }

// The OwnedEntry whose word is e. Pre: e was handed out by a recycling table.
inline OwnedEntry& owned_entry(Entry& e) { return *reinterpret_cast<OwnedEntry*>(&e); }
inline const OwnedEntry& owned_entry(const Entry& e) { return *reinterpret_cast<const OwnedEntry*>(&e); }

// R4 / R5: whether e belongs to `block` now (exact while the caller holds a latch on e).
inline bool owned_by(const Entry& e, BlockId block) {
  return owned_entry(e).owner.load(std::memory_order_acquire) == owner_key(block);
}

}  // namespace calico::translation
