// The page format of BasicCodedHnsw (include/calico/index/coded_hnsw.h): two spaces per
// index, every page opening with one header that names the index, and the metadata.
//
// Spaces (names: the index's name + a suffix):
//   <name>.codes    block 0: CodedPageHeader + CodedMeta (kind kMeta)
//                   blocks 1 .. model_pages: the quantiser's model blob (vector/model_blob.h),
//                     model_bytes bytes after each page's header, in order (kind kModel)
//                   then code pages (kind kCodes): code page c holds slots
//                     [c * per_code_page, (c + 1) * per_code_page):
//                     [header][presence bitmap: u64[bitmap_words]][removed bitmap: u64[bitmap_words]]
//                     [codes: per_code_page x code_bytes]
//                     header.crc = CRC32C of the bitmaps and codes (every byte after the
//                     header up to the last code). A removed slot (a tombstone) keeps its
//                     presence bit, code and node row until consolidate() frees it.
//   <name>.graph    block 0: header only (kind kGraphHead)
//                   blocks 1 ..: node pages (kind kNodes), per_node_page rows of
//                     {count u16, flags u16, ids u32[2M],    the node's level-0 neighbours
//                      present u32, code_crc u32, dim floats} its full vector
//                     code_crc = CRC32C of the node's code, so that a code and a vector that
//                     disagree are detected when the row is read.
//
// Why one row per node (DiskANN's layout: Subramanya et al., NeurIPS 2019, store each node's
// full vector beside its neighbour list): the search reads a node's row to expand it, and the
// same read gives the node's exact distance, so the nodes a search expands need no second
// read to be ranked. Format 2 kept links (30 to a
// page) and vectors apart; larger than memory it read a link page per expanded node and then
// 20-50 vector pages to re-rank (docs/results/vector_coded.md).
//
// Slot s lies in code page 1 + model_pages + s / per_code_page and node page 1 + s /
// per_node_page. The two regions grow together (the capacity is a multiple of neither: it is
// the smaller of the two regions' slots).
//
// Invariants (BasicCodedHnsw::check_structure): every page's header has the magic, its
// kind, the format, the index's uuid and its own block; a code page's crc matches; a slot's
// presence bit is set iff its node row is present (present == 1) and its code_crc is the
// CRC32C of its code; a removed bit only beside a presence bit; a link names a present slot
// (removed or not) below the capacity, never its owner, at most once; count <= 2M; an
// absent slot has no links; meta.size counts the completed adds not yet freed (<= present
// slots), meta.entry names a present slot (removed only until the next consolidate()).
//
// Format 2 added the removed bitmap (deletes), format 3 the node rows; earlier formats are
// refused by open().
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the coded HNSW format is little-endian");

// The first bytes of every page of the three spaces.
struct CodedPageHeader {
  static constexpr uint32_t kMagic = 0x31504843;  // "CHP1" little-endian
  static constexpr uint16_t kFormat = 3;
  enum Kind : uint16_t { kMeta = 1, kModel = 2, kCodes = 3, kGraphHead = 4, kNodes = 8 };
  uint32_t magic;
  uint16_t kind;
  uint16_t format;
  uint64_t uuid;   // the index's identity: the same in every page of its two spaces
  uint32_t block;  // this page's block in its space
  uint32_t crc;    // kCodes: CRC32C of the page's payload; else 0
};
static_assert(sizeof(CodedPageHeader) == 24);

// Block 0 of <name>.codes, after the header. The fields after `seed` change (under the
// page's exclusive latch).
struct CodedMeta {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t page_size;
  uint32_t dim;
  uint32_t metric;  // vector::Metric
  uint32_t bits;    // RaBitQ bits per dimension; 0: PQ codes (the model blob says which)
  uint32_t M;
  uint32_t ef_construction;
  uint32_t code_bytes;
  uint32_t model_bytes;
  uint32_t model_pages;
  uint32_t per_code_page, per_node_page;
  float alpha;  // the links heuristic's (CodedHnswParams::alpha)
  uint64_t seed;
  // --- mutable ---
  uint32_t capacity;  // slots with pages in both spaces
  uint32_t size;      // completed adds
  uint32_t entry;     // the first node added (kNone while empty)
  uint32_t entry_rate;  // 1 slot in entry_rate (by hash) starts searches (immutable)
};
static_assert(sizeof(CodedMeta) == 72);

// Sizes and offsets, pure arithmetic from (usable page bytes, dim, M, code bytes).
struct CodedLayout {
  uint32_t usable = 0, dim = 0, M = 0, code_bytes = 0, model_pages = 0;
  uint32_t per_code_page = 0, bitmap_words = 0, codes_offset = 0;
  uint32_t links_bytes = 0;                 // {count, flags, ids[2M]}: a row's first bytes
  uint32_t row_bytes = 0, per_node_page = 0;  // node rows: links, then {present, code_crc, vector}
  static constexpr uint32_t kHeader = sizeof(CodedPageHeader);

  // per_* == 0: a row does not fit a page.
  static CodedLayout make(uint32_t usable, uint32_t dim, uint32_t M, uint32_t code_bytes, uint32_t model_bytes) {
    CodedLayout l;
    l.usable = usable;
    l.dim = dim;
    l.M = M;
    l.code_bytes = code_bytes;
    const uint32_t room = usable > kHeader ? usable - kHeader : 0;
    l.model_pages = room == 0 ? 0 : (model_bytes + room - 1) / room;
    // n codes need n * code_bytes + 2 bitmaps of 8 * ceil(n / 64) bytes.
    uint32_t n = code_bytes == 0 ? 0 : room / code_bytes;
    while (n > 0 && uint64_t{n} * code_bytes + 16 * ((uint64_t{n} + 63) / 64) > room) --n;
    l.per_code_page = n;
    l.bitmap_words = (n + 63) / 64;
    l.codes_offset = kHeader + 16 * l.bitmap_words;
    l.links_bytes = 4 + 8 * M;
    const uint64_t row = uint64_t{l.links_bytes} + 8 + 4 * uint64_t{dim};
    l.row_bytes = row > room ? 0 : static_cast<uint32_t>(row);
    l.per_node_page = l.row_bytes == 0 ? 0 : room / l.row_bytes;
    return l;
  }
  bool fits() const { return per_code_page > 0 && per_node_page > 0 && model_pages > 0; }
  uint32_t code_block(uint32_t s) const { return 1 + model_pages + s / per_code_page; }
  uint32_t node_block(uint32_t s) const { return 1 + s / per_node_page; }
  uint32_t node_offset(uint32_t s) const { return kHeader + (s % per_node_page) * row_bytes; }
  // The vector part of slot s's row: {present u32, code_crc u32, dim floats}.
  uint32_t vec_offset(uint32_t s) const { return node_offset(s) + links_bytes; }
  uint32_t code_offset(uint32_t s) const { return codes_offset + (s % per_code_page) * code_bytes; }
  // Bytes of a code page the crc covers.
  uint32_t code_payload_bytes() const { return 16 * bitmap_words + per_code_page * code_bytes; }
  // The byte offsets in a code page of the presence and removed bitmaps' word holding slot s.
  uint32_t presence_word(uint32_t s) const { return kHeader + 8 * ((s % per_code_page) / 64); }
  uint32_t removed_word(uint32_t s) const { return kHeader + 8 * bitmap_words + 8 * ((s % per_code_page) / 64); }
  static uint64_t bit_of(uint32_t s, uint32_t per_code_page) { return uint64_t{1} << ((s % per_code_page) % 64); }
};

}  // namespace calico::index
