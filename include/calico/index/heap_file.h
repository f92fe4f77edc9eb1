// HeapFile: rows (variable-length byte strings) in slotted pages of one pool space, and the
// scans of the paper's Section 3.1 / Table 2 (SUM over one 8-byte column, pages visited in
// block order or in a given order such as a random permutation).
//
// The declaration and its contract. Unlike the other indexes, the member definitions
// (src/index/heap_file/heap_file_impl.h) are not inline: they are compiled once into the
// library for every translation policy (cmake/variants.cmake), so this header does not
// include them and users link those instantiations.
//
// Principal entry points:
//   HeapFile::create(pool, name) / HeapFile::open(pool, name)
//   append(row)                -> RowId     (thread-safe; serialized on the metadata page)
//   read(row_id, &out)         -> bool      (false for a RowId that does not exist)
//   size()                     -> rows
//   scan_sequential(fn, opts)  / scan_pages(order, fn, opts)   fn(RowId, span<const byte>)
//   sum_column(offset, opts)   / sum_column(offset, order, opts)   the Table 2 query
//   data_pages(), max_row_bytes(), rows_per_page(row_bytes)
//
// On-disk format (all integers little-endian; the host must be little-endian):
//
//   Block 0, the metadata page (MetaPage, 32 bytes at offset 0, the rest zero):
//     magic u64 "CALHEAP\0" | format_version u32 | page_size u32 |
//     row_count u64 | last_page u32 (the highest data page, 0 = none yet) | reserved u32
//
//   Blocks 1..last_page, data pages. Only the first usable_page_size() bytes (U) are used;
//   the pool owns the 16-byte trailer after them.
//     [0, 8)                      PageHeader: slot_count u16 | rows_begin u16 | tag u32
//     [8, 8 + 4 * slot_count)     slot array: Slot {offset u16, length u16}; slot i is row i
//     [8 + 4 * slot_count, rows_begin)   free space
//     [rows_begin, U)             rows, packed from the end: row i+1 sits below row i
//   Invariants (checked on every pinned access and on every validated optimistic one; a page
//   that breaks them is Error(kCorruptPage) naming it; unvalidated bytes are only
//   bounds-checked): 8 + 4 * slot_count <= rows_begin <= U, every slot's
//   [offset, offset + length) lies inside [rows_begin, U), and last_page < the space's blocks. Rows are never moved or deleted,
//   so a RowId stays valid for the life of the file.
//
// Capacity: a row takes length + 4 bytes of a page, so the longest row is
// max_row_bytes() = U - 12 (8164 bytes at 8 KB pages). Fixed-size rows of R bytes fit
// floor((U - 8) / (R + 4)) to a page: 1024-byte rows in 8 KB pages (U = 8176) give 7 rows
// per page (the paper's 8 KB / 1 KB would be 8, but the header, slots and the pool's
// trailer leave room for 7; 7 x 1028 + 8 = 7204 bytes used, 972 free).
//
// Concurrency: every append takes the metadata page's exclusive latch first and holds it for
// the whole append (then the last data page's, or a new page from allocate(): metadata page
// before data page, always), so appends are serialized and the row count, last_page and the
// page contents move together. Readers take one latch at a time (or none: optimistic reads).
// A scan bounds itself by last_page read when it starts: rows appended during a scan may or
// may not be visited; every visited row is complete. The HeapFile object itself holds no
// mutable state; any number of threads may use one object.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "calico/buffer_pool.h"
#include "calico/page_id.h"

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the heap format is little-endian");

// A row's address: the data page (block, high 32 bits) and the slot in it (low 32 bits).
struct RowId {
  uint64_t raw = 0;

  constexpr RowId() = default;
  constexpr explicit RowId(uint64_t r) : raw(r) {}
  constexpr RowId(BlockId block, uint32_t slot) : raw((static_cast<uint64_t>(block) << 32) | slot) {}

  constexpr BlockId block() const { return static_cast<BlockId>(raw >> 32); }
  constexpr uint32_t slot() const { return static_cast<uint32_t>(raw); }

  friend constexpr bool operator==(RowId, RowId) = default;
  friend constexpr auto operator<=>(RowId, RowId) = default;
};
static_assert(sizeof(RowId) == 8);
static_assert(RowId(7, 9).block() == 7 && RowId(7, 9).slot() == 9);
static_assert(RowId(1, 0) > RowId(0, 0xFFFFFFFFu), "RowId order is block order, then slot order");

// How a scan reads each page.
enum class ScanRead {
  kOptimistic,  // read_optimistic + validate, retried (bounded), then a shared pin
  kShared,      // pin_shared for the duration of the page
};

struct ScanOptions {
  ScanRead read = ScanRead::kOptimistic;
  // Group prefetch (BufferPool::prefetch_group): every prefetch_distance pages, hint the
  // next prefetch_distance pages of the scan order. 0 = off. At most kMaxPrefetchDistance.
  uint32_t prefetch_distance = 0;
};

// The on-page format constants, shared by every instantiation.
struct HeapFormat {
  static constexpr uint64_t kMagic = 0x0050414548'4C4143ull;  // "CALHEAP\0" little-endian
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint32_t kMaxPrefetchDistance = 256;
  static constexpr size_t kHeaderBytes = 8;
  static constexpr size_t kSlotBytes = 4;
};

// BasicHeapFile<Pool>: instantiated per translation (cmake/variants.cmake); HeapFile is the default.
template <class Pool>
class BasicHeapFile : public HeapFormat {
 public:
  using RowFn = std::function<void(RowId, std::span<const std::byte>)>;

  // Creates space `space_name` in `pool` and writes its metadata page (block 0).
  // Errors: those of BufferPool::create_space (kInvalidArgument, kSpaceExists), kPoolFull.
  static BasicHeapFile create(Pool& pool, std::string_view space_name);
  // Opens an existing heap file. Errors: kUnknownSpace; kInvalidArgument when the space is
  // empty, its block 0 does not carry the heap magic, or its format version or page size
  // differ (the message says which); pin errors (kIoError, kChecksumMismatch...).
  static BasicHeapFile open(Pool& pool, std::string_view space_name);

  // Appends a copy of `row` and returns its RowId. Thread-safe (serialized on the metadata
  // page's exclusive latch). The caller must hold no latch of this space.
  // Errors: kInvalidArgument when row.size() > max_row_bytes(); allocate()/pin errors;
  // kCorruptPage (the metadata or last data page breaks the format; nothing is written).
  RowId append(std::span<const std::byte> row);
  RowId append(std::string_view row) { return append(std::as_bytes(std::span(row.data(), row.size()))); }

  // Copies row `id` into *out and returns true; returns false (out untouched) when no such
  // row exists: block 0 or past the last data page, or slot past the page's slot count.
  // Reads under a shared pin. Errors: pin errors; kCorruptPage (the page breaks the format).
  bool read(RowId id, std::string* out) const;

  // Rows appended so far (the metadata page's row count).
  uint64_t size() const;
  // Data pages (blocks 1..data_pages()); 0 while the file is empty.
  BlockId data_pages() const;

  // Calls fn(row_id, row) for every row, pages in block order 1..last_page, rows in slot
  // order; so RowIds come in increasing order. The span is valid only during the call.
  // With kOptimistic, fn runs on a validated private copy of the page (never on bytes that
  // may change); with kShared, on the pinned page, so fn must not call into this heap file
  // (append, read, size, scans all wait for latches that an append waiting for this page
  // holds) nor take other latches of this space.
  // Errors: kInvalidArgument (prefetch_distance too large), pin errors, kCorruptPage (a page
  // breaking the format, or a last_page past the space); fn's exceptions pass.
  void scan_sequential(const RowFn& fn, ScanOptions opts = {}) const;
  // The same over the pages in `order` (each a data page, 1..data_pages(); repetitions
  // allowed), e.g. a random permutation: the B-tree-leaf-like order of Table 2.
  // Errors: kInvalidArgument for a block outside 1..data_pages(), as above otherwise.
  void scan_pages(std::span<const BlockId> order, const RowFn& fn, ScanOptions opts = {}) const;

  // The Table 2 query: SUM of the 8-byte little-endian integer at byte `offset` of every row
  // (rows shorter than offset + 8 are skipped, like NULLs), summed with wraparound (mod 2^64)
  // and returned as int64_t. The sequential form visits blocks 1..last_page; the other
  // visits `order` (checked as in scan_pages). kInvalidArgument when offset + 8 >
  // max_row_bytes(). With kOptimistic, the sum of a page is
  // computed on the page in place and kept only if the page validates.
  int64_t sum_column(size_t offset, ScanOptions opts = {}) const;
  int64_t sum_column(size_t offset, std::span<const BlockId> order, ScanOptions opts = {}) const;

  // The longest row: usable_page_size() - 12.
  size_t max_row_bytes() const { return usable_ - kHeaderBytes - kSlotBytes; }
  // How many rows of exactly row_bytes bytes fill one data page (0 if they do not fit).
  size_t rows_per_page(size_t row_bytes) const {
    return row_bytes > max_row_bytes() ? 0 : (usable_ - kHeaderBytes) / (row_bytes + kSlotBytes);
  }
  SpaceId space() const { return space_; }
  Pool& pool() const { return *pool_; }

 private:
  BasicHeapFile(Pool& pool, SpaceId space);

  // Calls visit(block) for every block in `order` (or 1..last when order is null),
  // issuing group prefetches ahead as opts asks.
  template <class Visit>
  void for_each_page(const std::span<const BlockId>* order, ScanOptions opts, Visit&& visit) const;
  // copy: usable_page_size() bytes of the caller's, for the optimistic copy of the page.
  void scan_one_page(BlockId block, const RowFn& fn, ScanRead read, std::byte* copy) const;
  uint64_t sum_one_page(BlockId block, size_t offset, ScanRead read) const;
  BlockId last_page() const;
  void check_column(size_t offset) const;  // throws kInvalidArgument unless offset + 8 fits a row

  Pool* pool_;
  SpaceId space_;
  size_t usable_;  // usable_page_size() of the pool
};

using HeapFile = BasicHeapFile<BufferPool>;
#ifndef CALICO_IMPLICIT_INSTANTIATION  // the fuzz build (CMakeLists.txt, CALICO_FUZZ)
extern template class BasicHeapFile<BufferPool>;
#endif

}  // namespace calico::index
