// BasicLipahTranslation<FallbackTable>: LIPAH's buffer-pool skipping ([LIPAH] sections 3.1,
// 4.1 and 4.4). A reference to a page is a pair (page id, frame id): the page id is the
// truth, the frame id a hint. An access goes straight to the hinted frame, checks that the
// frame holds the page (its owner) and that the page's state word names that frame, and
// reads it without any lookup; on a mismatch it falls back to the mapping table and reports
// the frame it found, so that the holder of the reference can repair its hint.
//
// What this policy provides to BasicBufferPool (include/calico/buffer_pool.h):
//  - kFrameHints = true: the pool keeps, per frame, a pointer to the state word of the page
//    in it (written by the loader before the frame's owner is published, cleared by the
//    evictor), and offers read_optimistic_hinted / pin_shared_hinted / pin_exclusive_hinted
//    and repair_hint. The proof that a hinted access never accepts another page is at
//    BasicBufferPool::read_optimistic_hinted.
//  - Table = FallbackTable: the mapping table consulted when a hint is missing or stale. The
//    page state word (translation::Entry) lives in the table's entry, which must be the same
//    object for a page for the pool's whole life (the frame's pointer to it may be followed
//    after the page left the frame; the checks above then reject it).
//
// The fallback table. LIPAH's pool is a hash table from page id to frame; the registered
// `lipah` falls back to `hash_open`'s table (src/translation/hash/hash_open.h: partitioned
// absl::flat_hash_map), `array_hinted` to Calico's array. Any Table of the pool's policy
// contract works; the tests also run it over a table that counts its lookups.
//
// B+trees (include/calico/index/btree.h) on a pool with frame hints store a 4-byte frame hint next to
// every child id and repair hints opportunistically: only when the exclusive latch of the
// page holding the hint is free at once, without marking the page dirty (a frame hint
// rarely survives the page's next eviction; [LIPAH] 4.4).
#pragma once

#include <concepts>
#include <string_view>

#include "translation/hash/hash_open.h"
#include "translation/array/translation_array.h"

namespace calico::translation {

template <class FallbackTable>
struct BasicLipahTranslation {
  static constexpr std::string_view kName = "lipah";
  using Table = FallbackTable;
  // The fallback lookup takes the table's flat fast path when it has one (arrays).
  static constexpr bool kFlatEntries = requires(const FallbackTable& t) {
    { t.entries() } -> std::same_as<Entry*>;
  };
  static constexpr bool kPagesInPlace = false;  // hints name frames of the frame arena
  static constexpr bool kDirect = false;
  static constexpr bool kFrameHints = true;
};

// The registered `lipah` variant: frame hints over hash_open's mapping table.
using LipahTranslation = BasicLipahTranslation<HashOpenTranslation::Table>;

// `array_hinted`: the same frame hints over Calico's translation array (docs/results/tpcc.md). A hinted
// access is as in lipah; a miss falls back to the array's one flat load instead of a hash
// probe, and the entries keep the array's size (a 64-bit word per page) and hole punching.
// The array keeps one entry object per page for the pool's life (a punched page of entries
// reads as zeros, which no hint check accepts), as the frames' entry pointers require.
struct ArrayHintedTranslation : BasicLipahTranslation<TranslationArray> {
  static constexpr std::string_view kName = "array_hinted";
};

}  // namespace calico::translation
