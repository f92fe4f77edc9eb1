// ArrayTranslation: Calico's translation ([Calico] section 4). A page id {space, block}
// finds its entry in two steps:
//   1. space -> the space's TranslationArray, through the thread's path cache
//      (space_directory.h; one compare in the common case, the directory array otherwise);
//   2. block -> entries[block], one 64-bit load (entry.h: frame 32 | version 24 | state 8).
// The frame is then frames + frame_id * page_size. Arrays are reserved, not written, so the
// zero page reads as "evicted"; cold groups of 512 entries are punched back to the OS
// (hole_punch_counter.h). This is the reference policy for BasicBufferPool.
//
// DirectTranslation: the physical limit for in-memory runs, used as the ceiling in reports.
// The same tables (pins, allocation and loading go through entries), but a fault puts
// block b in frame b + 1, nothing is ever evicted (a full pool is kPoolFull), and
// optimistic reads compute frames + (b + 1) * page_size with no lookup, no residency check
// and no validation. Correct only when every page read optimistically is resident and no
// thread modifies pages while others read (the microbenchmarks load, warm, then read).
// One space's blocks own the frames: a second space's pages collide and are refused.
#pragma once

#include <string_view>

#include "translation/array/translation_array.h"

namespace calico::translation {

struct ArrayTranslation {
  static constexpr std::string_view kName = "array";
  using Table = TranslationArray;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

// TieredArrayTranslation ("array_tiered"): the array with Calico tiers (docs/results/tiers.md,
// pool/features/tiering.h): PoolOptions::tiers.far puts a far frame tier behind the pool, and every
// access compares its frame id against the fast tier's last frame. A policy of its own so
// that the plain array's hot path has no such compare. Without a far tier it is the array
// plus that compare.
struct TieredArrayTranslation {
  static constexpr std::string_view kName = "array_tiered";
  using Table = TranslationArray;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
  static constexpr bool kTiered = true;
};

struct DirectTranslation {
  static constexpr std::string_view kName = "direct";
  using Table = TranslationArray;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = true;
};

}  // namespace calico::translation
