// The page format of BasicHnsw (include/calico/index/hnsw.h): where every byte of an HNSW index lives in its
// space, the metadata page, and the one function that reads page bytes without a latch.
//
// One space per index (DirectTranslation pools hold a single space, so no second space):
//
//   block 0                    metadata (HnswMeta below)
//   blocks 1 .. l0_pages       level 0: node id -> block 1 + id / per_page, slot id % per_page
//   blocks upper_base ..       upper levels (upper_base = 1 + l0_pages), grown on demand
//
// Level-0 page (per_page slots; structure of arrays so that vectors stay cache-line aligned):
//   [0, per_page * vec_stride)       vector of slot s at s * vec_stride: dim floats
//                                    (vec_stride = 4 * dim, rounded up to 64 when that still
//                                    fits per_page rows: then every vector starts a line)
//   [links_base, + per_page * row)   link row of slot s at links_base + s * row_bytes:
//       count u32      level-0 neighbours in use (<= 2M)
//       upper u32      first upper-list unit of the node (kNoUpper when level == 0)
//       level u16      the node's top level (0 .. max_level_cap - 1)
//       flags u16      kPresent once the node is written (zero: slot unused); kDeleted
//                      added when it is removed (a tombstone: the node stays in the
//                      graph, searches go through it and never return it)
//       ids u32[2M]    neighbour ids, ids[0 .. count)
//   A record is {vector, link row}: record_bytes = vec_stride + 12 + 8M; per_page =
//   usable_page_size / record_bytes. dim 128, M 16, 4 KB pages: 512 + 140 = 652 B, 6 per page.
//
// Upper region: lists of level l >= 1 are fixed-size units of (1 + M) u32 {count, ids[M]},
// lists_per_page = usable_page_size / unit_bytes per page. A node of top level L > 0 owns L
// consecutive units starting at its link row's `upper` (level l at unit upper + l - 1), never
// split across pages: unit u lives at block upper_base + u / lists_per_page, byte
// (u % lists_per_page) * unit_bytes. Units are handed out by a bump counter (upper_units).
//
// Format versions: 2 adds tombstones (kDeleted, HnswMeta::deleted). A version-1 index opens
// unchanged and is marked version 2 by its first remove(), so that a reader of version 1
// never returns a removed node.
//
// Invariants (checked by BasicHnsw::check_structure): a neighbour id is a present node,
// never the node itself, at most once per list; a level-l list names only nodes of level >= l;
// counts <= 2M (level 0) and <= M (upper); the entry point is present and has level max_level;
// size counts the present nodes and deleted the tombstones among them; on a level that two nodes or more are on, each of them has
// a non-empty list (after complete insertions). The last two hold while no add() has failed
// after its node became present; calico/index/hnsw.h ("A failed add") says what holds instead. Lists are
// kept in no particular order (appended, or in the heuristic's ascending-distance order after
// a shrink).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "calico/optimistic_reader.h"

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the HNSW format is little-endian");

// The metadata page (block 0). The fields after `seed` change; they are written under the
// page's exclusive latch and read optimistically (entry point and max level) or pinned.
struct HnswMeta {
  static constexpr uint64_t kMagic = 0x31574E53484C4143ull;  // "CALHNSW1" little-endian
  static constexpr uint32_t kFormatVersion = 2;
  static constexpr uint32_t kFirstFormatVersion = 1;  // opened unchanged (no tombstones)
  static constexpr uint32_t kNone = UINT32_MAX;  // entry when the index is empty

  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint32_t dim;
  uint32_t metric;  // vector::Metric
  uint32_t M;
  uint32_t ef_construction;
  uint32_t capacity;
  uint32_t per_page;
  uint32_t vec_stride;
  uint32_t l0_pages;
  uint32_t max_level_cap;
  uint32_t reserved;
  uint64_t seed;
  // --- mutable (meta page exclusive latch) ---
  uint32_t entry;        // entry point node, kNone when empty
  uint32_t max_level;    // its level
  uint32_t size;         // nodes added (tombstones included)
  uint32_t upper_units;  // upper-list units handed out
  uint32_t upper_pages;  // pages of the upper region allocated
  uint32_t deleted;      // tombstones (nodes removed); zero in version 1
};
static_assert(sizeof(HnswMeta) == 88);
static_assert(offsetof(HnswMeta, entry) == 64);

// The mutable tail of HnswMeta, as readers copy it.
struct HnswMetaState {
  uint32_t entry;
  uint32_t max_level;
  uint32_t size;
  uint32_t upper_units;
  uint32_t upper_pages;
  uint32_t deleted;
};
static_assert(sizeof(HnswMetaState) == sizeof(HnswMeta) - offsetof(HnswMeta, entry));

// The fixed head of a level-0 link row.
struct HnswRowHead {
  static constexpr uint16_t kPresent = 1;
  static constexpr uint16_t kDeleted = 2;  // only with kPresent
  static constexpr uint32_t kNoUpper = UINT32_MAX;
  uint32_t count;
  uint32_t upper;
  uint16_t level;
  uint16_t flags;

  bool present() const { return flags != 0; }
  bool live() const { return flags == kPresent; }  // present and not removed
  // The flags a written head may hold: 0, kPresent, kPresent | kDeleted.
  bool flags_ok() const { return flags == 0 || flags == kPresent || flags == (kPresent | kDeleted); }
};
static_assert(sizeof(HnswRowHead) == 12);

// Sizes and offsets derived from (page size, dim, M, capacity); pure arithmetic.
struct HnswLayout {
  static constexpr uint32_t kMaxLevels = 16;  // levels 0..15 (P(level >= 16) = M^-16)
  static constexpr uint32_t kMaxM = 256;      // bounds the stack/scratch sizes
  uint32_t usable = 0;        // usable page bytes
  uint32_t dim = 0, M = 0, capacity = 0;
  uint32_t vec_stride = 0;    // bytes between vectors of one page
  uint32_t row_bytes = 0;     // link row: 12 + 8M
  uint32_t per_page = 0;      // nodes per level-0 page
  uint32_t links_base = 0;    // first link row's offset
  uint32_t l0_pages = 0;
  uint32_t upper_base = 0;    // first block of the upper region
  uint32_t unit_bytes = 0;    // one upper list: 4 (1 + M)
  uint32_t lists_per_page = 0;
  uint32_t max_level_cap = 0; // levels are 0 .. max_level_cap - 1

  // per_page == 0 means dim/M do not fit a page.
  static HnswLayout make(uint32_t usable, uint32_t dim, uint32_t M, uint32_t capacity) {
    HnswLayout l;
    l.usable = usable;
    l.dim = dim;
    l.M = M;
    l.capacity = capacity;
    l.row_bytes = static_cast<uint32_t>(sizeof(HnswRowHead)) + 8 * M;
    const uint64_t vec = uint64_t{4} * dim;
    const uint64_t plain = vec + l.row_bytes;
    const uint64_t per = usable / plain;
    if (per == 0 || vec > UINT32_MAX) return l;
    const uint64_t aligned = (vec + 63) / 64 * 64;
    l.vec_stride = static_cast<uint32_t>(per * (aligned + l.row_bytes) <= usable ? aligned : vec);
    l.per_page = static_cast<uint32_t>(per);
    l.links_base = l.per_page * l.vec_stride;
    l.l0_pages = static_cast<uint32_t>((uint64_t{capacity} + per - 1) / per);
    l.upper_base = 1 + l.l0_pages;
    l.unit_bytes = 4 * (1 + M);
    l.lists_per_page = usable / l.unit_bytes;
    l.max_level_cap = l.lists_per_page < kMaxLevels ? l.lists_per_page : kMaxLevels;
    return l;
  }
  uint32_t block_of(uint32_t id) const { return 1 + id / per_page; }
  uint32_t vector_offset(uint32_t id) const { return (id % per_page) * vec_stride; }
  uint32_t row_offset(uint32_t id) const { return links_base + (id % per_page) * row_bytes; }
  // The unit of level l >= 1 of a node whose first unit is `upper`.
  uint64_t upper_block(uint32_t upper, uint32_t level) const {
    return uint64_t{upper_base} + (uint64_t{upper} + level - 1) / lists_per_page;
  }
  uint32_t upper_offset(uint32_t upper, uint32_t level) const {
    return static_cast<uint32_t>((uint64_t{upper} + level - 1) % lists_per_page) * unit_bytes;
  }
};

namespace hnsw_detail {

// The only reader of unlatched page bytes: copies `bytes` (a multiple of 4) at `src` of a
// page that a writer may be changing. The copy is used only after the page's version
// validated (or under a pin); callers bounds-check the range before calling and every value
// taken from the copy before using it. An optimistic reader (calico/optimistic_reader.h: the race is
// intended, src/pool/README.md rule 4).
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) void hnsw_racy_copy(void* dst, const std::byte* src,
                                                                            size_t bytes) {
  racy_copy(dst, src, bytes);
}

}  // namespace hnsw_detail

}  // namespace calico::index
