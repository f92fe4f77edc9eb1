// The page format of BasicHnsw (include/calico/index/hnsw.h): where every byte of an HNSW index lives in its
// space, the metadata page, and the one function that reads page bytes without a latch.
//
// One space per index (DirectTranslation pools hold a single space, so no second space).
// Nodes are numbered by slot (the node id); the slots live in level-0 pages, the upper
// levels' lists in upper pages. Both regions are sequences of *extents*, runs of contiguous
// blocks (format 3):
//
//   block 0                    metadata (HnswMeta, then HnswExtentTable)
//   blocks 1 .. l0_pages       level-0 extent 0 (create()'s capacity, rounded up to pages;
//                              always here: page_of maps it without the extent map)
//   then, in allocation order, upper extents and further level-0 extents
//
//   Level-0 page p (slot id is in page p = id / per_page, at slot id % per_page) lies in
//   extent e with first(e) <= p < first(e + 1), at block l0_base[e] + p - first(e), where
//   extent 0 has l0_pages pages and extent e >= 1 has l0_pages << (e - 1): each new extent
//   doubles the capacity. Upper page p likewise, with upper_base[] and an extent 0 of one
//   page. An extent's blocks are allocated all at once, so they are contiguous.
//   Format 1 and 2 (no extent table): one level-0 extent, blocks 1 .. l0_pages, and one
//   upper region from upper_base = 1 + l0_pages on, grown a page at a time; their capacity
//   is fixed.
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
// split across pages: unit u lives in upper page u / lists_per_page, byte
// (u % lists_per_page) * unit_bytes. Units are handed out by a bump counter (upper_units).
//
// Format versions: 2 adds tombstones (kDeleted, HnswMeta::deleted). A version-1 index opens
// unchanged and is marked version 2 by its first remove(), so that a reader of version 1
// never returns a removed node. 3 adds the extent table (growth); rows are as in 2.
// create() writes 3; versions 1 and 2 open with the capacity they were created with.
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

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "calico/checks.h"
#include "calico/optimistic_reader.h"

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the HNSW format is little-endian");

// The metadata page (block 0). The fields after `seed` change; they are written under the
// page's exclusive latch and read optimistically (entry point and max level) or pinned.
struct HnswMeta {
  static constexpr uint64_t kMagic = 0x31574E53484C4143ull;  // "CALHNSW1" little-endian
  static constexpr uint32_t kFormatVersion = 3;
  static constexpr uint32_t kFirstFormatVersion = 1;  // opened unchanged (no tombstones)
  static constexpr uint32_t kFirstTombstoneVersion = 2;
  static constexpr uint32_t kFirstGrowingVersion = 3;  // the extent table follows
  static constexpr uint32_t kNone = UINT32_MAX;  // entry when the index is empty

  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint32_t dim;
  uint32_t metric;  // vector::Metric
  uint32_t M;
  uint32_t ef_construction;
  uint32_t capacity;  // create()'s; format 3: the capacity is the extents' (HnswExtentTable)
  uint32_t per_page;
  uint32_t vec_stride;
  uint32_t l0_pages;  // level-0 extent 0
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

// Format 3: the extents, right after HnswMeta on the metadata page. Written under the
// metadata page's exclusive latch by a growth, after the extent's blocks were allocated;
// read at open (the index keeps the map in memory: HnswExtentMap).
struct HnswExtentTable {
  static constexpr uint32_t kMaxExtents = 32;  // doubling: 2^31 times extent 0, past any u32 slot
  uint32_t l0_count;      // level-0 extents (>= 1)
  uint32_t upper_count;   // upper extents (>= 0)
  uint32_t l0_base[kMaxExtents];     // first block of level-0 extent e
  uint32_t upper_base[kMaxExtents];  // first block of upper extent e
};
static_assert(sizeof(HnswMeta) + sizeof(HnswExtentTable) == 352);

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
  uint32_t upper_base = 0;    // first block of the upper region (formats 1 and 2)
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
  // The block of node id while it lies in level-0 extent 0 (id < the capacity create() was
  // given, rounded up to pages); BasicHnsw::page_of maps every id.
  uint32_t block_of(uint32_t id) const { return 1 + id / per_page; }
  uint32_t vector_offset(uint32_t id) const { return (id % per_page) * vec_stride; }
  uint32_t row_offset(uint32_t id) const { return links_base + (id % per_page) * row_bytes; }
  // The upper page (index in the upper region) of the unit of level l >= 1 of a node whose
  // first unit is `upper`.
  uint64_t upper_page(uint32_t upper, uint32_t level) const {
    return (uint64_t{upper} + level - 1) / lists_per_page;
  }
  uint32_t upper_offset(uint32_t upper, uint32_t level) const {
    return static_cast<uint32_t>((uint64_t{upper} + level - 1) % lists_per_page) * unit_bytes;
  }
};

// Region page -> block for one region (level 0 or upper), in memory. Extent e holds region
// pages [first[e], first[e + 1]) at blocks base[e] ..; first[count] is the region's end
// (kOpen: format 1 and 2's upper region, which has no end).
//
// Concurrency: grow() (under the index's allocation mutex) writes the new extent's base and
// end before it publishes the larger capacity (release); a reader maps only pages of slots
// or units it learned of through that publication (a validated list or head written by an
// add that followed the growth), so it reads the values grow() wrote. Relaxed atomics: on
// the search path the map costs one compare and two loads per page (extent 0).
class HnswExtentMap {
 public:
  static constexpr uint32_t kMax = HnswExtentTable::kMaxExtents;
  static constexpr uint64_t kOpen = UINT64_MAX;

  HnswExtentMap() = default;
  HnswExtentMap(const HnswExtentMap& o) { *this = o; }
  HnswExtentMap& operator=(const HnswExtentMap& o) {
    count_.store(o.count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    for (uint32_t e = 0; e <= kMax; ++e) first_[e].store(o.first_[e].load(std::memory_order_relaxed), std::memory_order_relaxed);
    for (uint32_t e = 0; e < kMax; ++e) base_[e].store(o.base_[e].load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  uint32_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t end() const { return first_[count()].load(std::memory_order_relaxed); }  // pages mapped
  uint64_t first(uint32_t e) const { return first_[e].load(std::memory_order_relaxed); }
  uint32_t base(uint32_t e) const { return base_[e].load(std::memory_order_relaxed); }
  // Appends an extent of `pages` pages at `base` (one writer at a time).
  void grow(uint32_t base, uint64_t pages) {
    const uint32_t e = count();
    base_[e].store(base, std::memory_order_relaxed);
    first_[e + 1].store(first(e) + pages, std::memory_order_relaxed);
    count_.store(e + 1, std::memory_order_relaxed);
  }
  // Format 1 and 2's upper region: from `base`, open-ended.
  void open_region(uint32_t base) {
    CALICO_DCHECK(count() == 0);
    base_[0].store(base, std::memory_order_relaxed);
    first_[1].store(kOpen, std::memory_order_relaxed);
    count_.store(1, std::memory_order_relaxed);
  }
  // The block of region page p < end(). Extent 0 first: one compare in an index that never grew.
  uint64_t block(uint64_t p) const {
    uint32_t e = 0;
    while (p >= first_[e + 1].load(std::memory_order_relaxed)) ++e;
    return base_[e].load(std::memory_order_relaxed) + (p - first_[e].load(std::memory_order_relaxed));
  }

 private:
  std::atomic<uint32_t> count_{0};
  std::array<std::atomic<uint64_t>, kMax + 1> first_{};  // first_[0] = 0
  std::array<std::atomic<uint32_t>, kMax> base_{};
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
