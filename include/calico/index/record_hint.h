// RecordHint and HintStats: LIPAH's index skipping ([LIPAH] 3.2, 3.3, 4.2) for
// BasicBTree (calico/index/btree.h: lookup_hinted, update_hinted, and the `where` outputs of insert,
// upsert and update).
//
// Entry points:
//   RecordHint            (block, slot) of a record in one tree; 8 bytes on disk
//   RecordHint::encode / decode / none()
//   HintStats             per-caller counters of how hinted accesses went
//
// A RecordHint is a guess, stored by the caller wherever it likes (a secondary index's value
// next to the primary key, a transaction's read/write set) and never trusted: the tree
// validates the hinted page before using anything from it (calico/index/btree.h, "Index skipping") and
// falls back to the root-to-leaf search when it does not hold the key. Any 8 bytes decode to
// a hint that is safe to pass back.
//
// It holds no frame hint. A frame id is worth nothing after a restart and stale after every
// eviction of the leaf ([LIPAH] 4.4), so persisting one in each secondary entry would cost
// 4 more bytes (+50%) and a secondary-leaf write per repair for a hint that rarely survives;
// the paper does not dirty pages for frame hints either. Callers that keep records in memory
// for a short while (read/write sets) may keep a FrameId next to the RecordHint and pass it
// to lookup_hinted / update_hinted, which use it on pools with frame hints (lipah) and
// repair it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "calico/page_id.h"

namespace calico::index {

struct RecordHint {
  static constexpr size_t kBytes = 8;

  BlockId block = 0;      // the leaf's block; 0 = no hint (block 0 is the metadata page)
  uint16_t slot = 0;      // the record's slot in that leaf, as last seen
  uint16_t reserved = 0;  // written as 0; ignored when decoded

  // All zero: no hint. A hint with block 0 and another field set is garbage, not "none".
  bool none() const { return block == 0 && slot == 0 && reserved == 0; }

  // 8 bytes, little endian: block (4), slot (2), reserved (2).
  void encode(void* out) const {
    unsigned char* p = static_cast<unsigned char*>(out);
    for (size_t i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(block >> (8 * i));
    for (size_t i = 0; i < 2; ++i) p[4 + i] = static_cast<unsigned char>(slot >> (8 * i));
    p[6] = p[7] = 0;
  }
  // Any 8 bytes are a valid input (the result is a guess, checked before use).
  static RecordHint decode(const void* in) {
    const unsigned char* p = static_cast<const unsigned char*>(in);
    RecordHint h;
    for (size_t i = 0; i < 4; ++i) h.block |= static_cast<BlockId>(p[i]) << (8 * i);
    h.slot = static_cast<uint16_t>(p[4] | p[5] << 8);
    h.reserved = static_cast<uint16_t>(p[6] | p[7] << 8);
    return h;
  }

  friend bool operator==(const RecordHint&, const RecordHint&) = default;
};
static_assert(sizeof(RecordHint) == RecordHint::kBytes, "a hint is 8 bytes in memory and on disk");

// How hinted accesses went; plain counters owned by one caller (e.g. per thread, per index),
// added to by lookup_hinted / update_hinted. Every call adds exactly one to hits,
// slot_moved or fallbacks; stale and none give the reasons of fallbacks (the rest of the
// fallbacks are hinted pages that kept changing under an optimistic read).
struct HintStats {
  uint64_t hits = 0;          // the hinted slot held the key: no descent, no search
  uint64_t slot_moved = 0;    // the hinted page covers the key but the slot did not hold it:
                              // answered by a search in that page (found or absent), no descent
  uint64_t fallbacks = 0;     // answered by the root-to-leaf descent
  uint64_t stale = 0;         // a hint named a page that does not cover the key (split,
                              // merge, reuse, garbage): a fallback
  uint64_t none = 0;          // no hint given: a fallback
  uint64_t frame_misses = 0;  // frame hints (lipah): the given frame did not hold the page

  uint64_t calls() const { return hits + slot_moved + fallbacks; }
  HintStats& operator+=(const HintStats& o) {
    hits += o.hits;
    slot_moved += o.slot_moved;
    fallbacks += o.fallbacks;
    stale += o.stale;
    none += o.none;
    frame_misses += o.frame_misses;
    return *this;
  }
};

}  // namespace calico::index
