// BasicHeapFile<Pool> implementation (included only where heap files are instantiated:
// cmake/variants.cmake): the page format (see calico/index/heap_file.h), appends under the metadata
// page's exclusive latch, and scans with shared pins or validated optimistic reads.
//
// Entry points: HeapFile::create / open / append / read / size / data_pages /
// scan_sequential / scan_pages / sum_column.
//
// Optimistic reads (src/pool/README.md, rule 4): the bytes of a page read without a latch
// may change under us or belong to another page until validate() succeeds. Every read of
// such bytes goes through a heap_racy_* function below, an optimistic reader
// (calico/optimistic_reader.h: the race is intended, not instrumented by TSan) that bounds-checks
// everything it takes from the page before using it as an index. Only validated results
// are used. A pinned page, or a validated copy or result, that breaks the page invariants is
// Error(kCorruptPage) naming the page (index/corrupt_page.h): its bytes may come from disk.
#pragma once

#include "calico/index/heap_file.h"

#include <cstring>
#include <string>
#include <vector>

#include "calico/checks.h"
#include "calico/error.h"
#include "index/corrupt_page.h"
#include "calico/optimistic_reader.h"

namespace calico::index {
namespace heap_detail {

// Block 0. Fields at fixed offsets; the rest of the page is zero.
struct MetaPage {
  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint64_t row_count;
  uint32_t last_page;  // highest data page; 0 = no data page yet
  uint32_t reserved;
};
static_assert(sizeof(MetaPage) == 32);
static_assert(offsetof(MetaPage, row_count) == 16 && offsetof(MetaPage, last_page) == 24);
static_assert(std::is_trivially_copyable_v<MetaPage>);

struct PageHeader {
  uint16_t slot_count;
  uint16_t rows_begin;  // lowest byte used by a row; usable_page_size() when the page is empty
  uint32_t tag;         // kDataTag on an initialized data page
};
static_assert(sizeof(PageHeader) == HeapFormat::kHeaderBytes);

struct Slot {
  uint16_t offset;
  uint16_t length;
};
static_assert(sizeof(Slot) == HeapFormat::kSlotBytes);

// An all-zero page (tag 0) is a valid empty data page too: BufferPool::allocate leaves a zero
// block behind when it fails after claiming the block, and the next append skips over it.
constexpr uint32_t kDataTag = 0x54414448;  // "HDAT"

// u16 offsets must address every byte of the largest page (16 KB).
static_assert(16384 - BufferPool::kTrailerBytes <= UINT16_MAX);

inline MetaPage load_meta(const std::byte* page) {
  MetaPage m;
  std::memcpy(&m, page, sizeof m);
  return m;
}
inline void store_meta(std::byte* page, const MetaPage& m) { std::memcpy(page, &m, sizeof m); }
inline PageHeader load_header(const std::byte* page) {
  PageHeader h;
  std::memcpy(&h, page, sizeof h);
  return h;
}
inline void store_header(std::byte* page, const PageHeader& h) { std::memcpy(page, &h, sizeof h); }
inline Slot load_slot(const std::byte* page, size_t i) {
  Slot s;
  std::memcpy(&s, page + HeapFormat::kHeaderBytes + i * HeapFormat::kSlotBytes, sizeof s);
  return s;
}

// The page invariants of calico/index/heap_file.h, on bytes that cannot change (pinned or a validated
// copy). Returns false when they do not hold.
inline bool header_ok(const PageHeader& h, size_t usable) {
  if (h.tag == 0) return h.slot_count == 0 && h.rows_begin == 0;  // a zero page: empty
  return h.tag == kDataTag &&
         HeapFormat::kHeaderBytes + size_t{h.slot_count} * HeapFormat::kSlotBytes <= h.rows_begin &&
         h.rows_begin <= usable;
}
inline bool slot_ok(const PageHeader& h, const Slot& s, size_t usable) {
  return s.offset >= h.rows_begin && size_t{s.offset} + s.length <= usable;
}

[[noreturn]] inline void corrupt(PageId pid, const std::string& what) { index::corrupt_page("heap file", what, pid); }
[[noreturn]] inline void bad_header(PageId pid, const PageHeader& h) {
  corrupt(pid, "data page header (tag " + std::to_string(h.tag) + ", " + std::to_string(h.slot_count) +
                   " slots, rows from " + std::to_string(h.rows_begin) + ") is not a data page's");
}
[[noreturn]] inline void bad_slot(PageId pid, uint32_t i) {
  corrupt(pid, "slot " + std::to_string(i) + " lies outside the page's rows");
}

// Visits the rows of a stable page (pinned or a validated private copy).
// Errors: kCorruptPage when the page breaks the invariants (nothing is visited then).
template <class Fn>
void for_each_row(const std::byte* page, size_t usable, PageId pid, Fn&& fn) {
  PageHeader h = load_header(page);
  if (!header_ok(h, usable)) bad_header(pid, h);
  for (uint32_t i = 0; i < h.slot_count; ++i) {
    if (!slot_ok(h, load_slot(page, i), usable)) bad_slot(pid, i);
  }
  for (uint32_t i = 0; i < h.slot_count; ++i) {
    Slot s = load_slot(page, i);
    fn(RowId(pid.block(), i), std::span<const std::byte>(page + s.offset, s.length));
  }
}

// --- racy readers: the only code that reads unlatched page bytes ----------------------

// Copies `bytes` (a multiple of 8, page-aligned source) of a page that may be changing.
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) void heap_racy_copy(std::byte* dst, const std::byte* src,
                                                                            size_t bytes) {
  racy_copy(dst, src, bytes);
}

// Reads the 8-byte integer at `at` of a page that may be changing (at + 8 <= page size).
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) uint64_t heap_racy_u64(const std::byte* at) {
  uint64_t v;
  __builtin_memcpy(&v, at, 8);
  return v;
}

// SUM of the 8-byte integer at `offset` over the rows of a page that may be changing.
// Every slot and bound taken from the page is checked before it is used; returns false when
// one fails (garbage: the caller's validation will fail too, or the page is broken).
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) bool heap_racy_sum_page(const std::byte* page, size_t usable,
                                                                           size_t offset, uint64_t* sum_out) {
  PageHeader h;
  __builtin_memcpy(&h, page, sizeof h);
  if (h.tag == 0 && h.slot_count == 0 && h.rows_begin == 0) {
    *sum_out = 0;
    return true;
  }
  if (h.tag != kDataTag || HeapFormat::kHeaderBytes + size_t{h.slot_count} * HeapFormat::kSlotBytes > h.rows_begin ||
      h.rows_begin > usable) {
    return false;
  }
  uint64_t sum = 0;
  for (uint32_t i = 0; i < h.slot_count; ++i) {
    Slot s;
    __builtin_memcpy(&s, page + HeapFormat::kHeaderBytes + i * HeapFormat::kSlotBytes, sizeof s);
    if (s.offset < h.rows_begin || size_t{s.offset} + s.length > usable) return false;
    if (s.length < offset + 8) continue;  // too short: skipped, like a NULL
    uint64_t v;
    __builtin_memcpy(&v, page + s.offset + offset, 8);
    sum += v;
  }
  *sum_out = sum;
  return true;
}

}  // namespace heap_detail

// --- create / open ---------------------------------------------------------------------

template <class Pool>
BasicHeapFile<Pool>::BasicHeapFile(Pool& pool, SpaceId space)
    : pool_(&pool), space_(space), usable_(pool.usable_page_size()) {
  CALICO_CHECK(usable_ % 8 == 0 && usable_ > kHeaderBytes + kSlotBytes);
}

template <class Pool>
BasicHeapFile<Pool> BasicHeapFile<Pool>::create(Pool& pool, std::string_view space_name) {
  SpaceId space = pool.create_space(space_name);
  try {
    ExclusiveGuard g = pool.allocate(space);
    CALICO_CHECK(g.page_id().block() == 0);
    heap_detail::MetaPage m{};
    m.magic = kMagic;
    m.format_version = kFormatVersion;
    m.page_size = static_cast<uint32_t>(pool.page_size());
    heap_detail::store_meta(g.data(), m);
    g.mark_dirty();
  } catch (...) {
    pool.drop_space(space);  // no half-made heap file is left behind
    throw;
  }
  return BasicHeapFile(pool, space);
}

template <class Pool>
BasicHeapFile<Pool> BasicHeapFile<Pool>::open(Pool& pool, std::string_view space_name) {
  SpaceId space = pool.open_space(space_name);
  std::string name(space_name);
  if (pool.space_blocks(space) == 0) {
    throw Error(ErrorCode::kInvalidArgument, "space '" + name + "' is not a heap file (it is empty)");
  }
  heap_detail::MetaPage m;
  {
    SharedGuard g = pool.pin_shared(PageId(space, 0));
    m = heap_detail::load_meta(g.data());
  }
  if (m.magic != kMagic) {
    throw Error(ErrorCode::kInvalidArgument, "space '" + name + "' is not a heap file (no heap magic in block 0)");
  }
  if (m.format_version != kFormatVersion) {
    throw Error(ErrorCode::kInvalidArgument, "heap file '" + name + "' has format version " +
                                                 std::to_string(m.format_version) + ", expected " +
                                                 std::to_string(kFormatVersion));
  }
  if (m.page_size != pool.page_size()) {
    throw Error(ErrorCode::kInvalidArgument, "heap file '" + name + "' was written with " +
                                                 std::to_string(m.page_size) + "-byte pages");
  }
  if (m.last_page >= pool.space_blocks(space)) {
    throw Error(ErrorCode::kInvalidArgument, "heap file '" + name + "' names last page " +
                                                 std::to_string(m.last_page) + " past its end");
  }
  return BasicHeapFile(pool, space);
}

// --- append / read ---------------------------------------------------------------------

template <class Pool>
RowId BasicHeapFile<Pool>::append(std::span<const std::byte> row) {
  if (row.size() > max_row_bytes()) {
    throw Error(ErrorCode::kInvalidArgument, "heap row of " + std::to_string(row.size()) +
                                                 " bytes exceeds the maximum of " + std::to_string(max_row_bytes()));
  }
  // Lock order: metadata page, then one data page (declared after, so released first).
  ExclusiveGuard meta = pool_->pin_exclusive(PageId(space_, 0));
  heap_detail::MetaPage m = heap_detail::load_meta(meta.data());
  if (m.magic != kMagic) heap_detail::corrupt(meta.page_id(), "metadata page has no heap magic");
  if (m.last_page >= pool_->space_blocks(space_)) {
    heap_detail::corrupt(meta.page_id(), "metadata names last page " + std::to_string(m.last_page) + " past the space");
  }
  const size_t need = row.size() + kSlotBytes;

  ExclusiveGuard page;
  heap_detail::PageHeader h{};
  if (m.last_page != 0) {
    page = pool_->pin_exclusive(PageId(space_, m.last_page));
    h = heap_detail::load_header(page.data());
    if (!heap_detail::header_ok(h, usable_)) heap_detail::bad_header(page.page_id(), h);
    if (h.tag == 0 || h.rows_begin - (kHeaderBytes + size_t{h.slot_count} * kSlotBytes) < need) page.release();
  }
  if (!page.held()) {
    page = pool_->allocate(space_);
    // Appends are serialized, so nobody else allocates here (and last_page < the space's
    // blocks was checked); a failed allocate may have left zero blocks (empty pages) in between.
    CALICO_CHECK(page.page_id().block() > m.last_page);
    h = heap_detail::PageHeader{0, static_cast<uint16_t>(usable_), heap_detail::kDataTag};
    m.last_page = page.page_id().block();
  }
  CALICO_DCHECK(h.rows_begin - (kHeaderBytes + size_t{h.slot_count} * kSlotBytes) >= need);

  const uint32_t slot = h.slot_count;
  heap_detail::Slot s{static_cast<uint16_t>(h.rows_begin - row.size()), static_cast<uint16_t>(row.size())};
  if (!row.empty()) std::memcpy(page.data() + s.offset, row.data(), row.size());
  std::memcpy(page.data() + kHeaderBytes + slot * kSlotBytes, &s, sizeof s);
  h.slot_count = static_cast<uint16_t>(slot + 1);
  h.rows_begin = s.offset;
  CALICO_DCHECK(heap_detail::header_ok(h, usable_) && heap_detail::slot_ok(h, s, usable_));
  heap_detail::store_header(page.data(), h);
  page.mark_dirty();

  m.row_count += 1;
  heap_detail::store_meta(meta.data(), m);
  meta.mark_dirty();
  return RowId(page.page_id().block(), slot);
}

template <class Pool>
bool BasicHeapFile<Pool>::read(RowId id, std::string* out) const {
  if (id.block() == 0 || id.block() > last_page()) return false;
  SharedGuard g = pool_->pin_shared(PageId(space_, id.block()));
  heap_detail::PageHeader h = heap_detail::load_header(g.data());
  if (!heap_detail::header_ok(h, usable_)) heap_detail::bad_header(g.page_id(), h);
  if (id.slot() >= h.slot_count) return false;
  heap_detail::Slot s = heap_detail::load_slot(g.data(), id.slot());
  if (!heap_detail::slot_ok(h, s, usable_)) heap_detail::bad_slot(g.page_id(), id.slot());
  out->assign(reinterpret_cast<const char*>(g.data() + s.offset), s.length);
  return true;
}

template <class Pool>
uint64_t BasicHeapFile<Pool>::size() const {
  return pool_->optimistic_read(PageId(space_, 0), [](const std::byte* p) {
    return heap_detail::heap_racy_u64(p + offsetof(heap_detail::MetaPage, row_count));
  });
}

template <class Pool>
BlockId BasicHeapFile<Pool>::last_page() const {
  uint64_t last = pool_->optimistic_read(PageId(space_, 0), [](const std::byte* p) {
    return heap_detail::heap_racy_u64(p + offsetof(heap_detail::MetaPage, last_page)) & 0xFFFFFFFFu;
  });
  return static_cast<BlockId>(last);
}

template <class Pool>
BlockId BasicHeapFile<Pool>::data_pages() const { return last_page(); }

// --- scans -------------------------------------------------------------------------------

template <class Pool>
template <class Visit>
void BasicHeapFile<Pool>::for_each_page(const std::span<const BlockId>* order, ScanOptions opts, Visit&& visit) const {
  if (opts.prefetch_distance > kMaxPrefetchDistance) {
    throw Error(ErrorCode::kInvalidArgument, "prefetch_distance " + std::to_string(opts.prefetch_distance) +
                                                 " exceeds " + std::to_string(kMaxPrefetchDistance));
  }
  const BlockId last = last_page();
  if (last >= pool_->space_blocks(space_)) {
    heap_detail::corrupt(PageId(space_, 0), "metadata names last page " + std::to_string(last) + " past the space");
  }
  if (order != nullptr) {
    for (BlockId b : *order) {
      if (b == 0 || b > last) {
        throw Error(ErrorCode::kInvalidArgument, "scan order names block " + std::to_string(b) +
                                                     ", not a data page (1.." + std::to_string(last) + ")");
      }
    }
  }
  const size_t n = order != nullptr ? order->size() : last;
  auto block_at = [&](size_t i) -> BlockId { return order != nullptr ? (*order)[i] : static_cast<BlockId>(i + 1); };

  const size_t d = opts.prefetch_distance;
  std::vector<PageId> group;
  auto prefetch = [&](size_t from, size_t to) {
    group.clear();
    for (size_t i = from; i < std::min(to, n); ++i) group.push_back(PageId(space_, block_at(i)));
    if (!group.empty()) pool_->prefetch_group(group);
  };
  for (size_t i = 0; i < n; ++i) {
    // The window of hinted pages stays between d and 2d ahead: one batch every d pages.
    if (d != 0 && i % d == 0) prefetch(i == 0 ? 0 : i + d, i + 2 * d);
    visit(block_at(i));
  }
}

template <class Pool>
void BasicHeapFile<Pool>::scan_one_page(BlockId block, const RowFn& fn, ScanRead read, std::byte* copy) const {
  const PageId pid(space_, block);
  if (read == ScanRead::kShared) {
    SharedGuard g = pool_->pin_shared(pid);
    heap_detail::for_each_row(g.data(), usable_, pid, fn);
    return;
  }
  // Copy the page, validate, and only then look at the copy (fn never sees changing bytes).
  bool copied = false;
  for (int attempt = 0; attempt < Pool::kOptimisticAttempts && !copied; ++attempt) {
    OptimisticRead r = pool_->read_optimistic(pid);
    heap_detail::heap_racy_copy(copy, r.data, usable_);
    copied = Pool::validate(r);
  }
  if (!copied) {  // repeated conflicts with writers: copy under a shared pin instead
    SharedGuard g = pool_->pin_shared(pid);
    std::memcpy(copy, g.data(), usable_);
  }
  heap_detail::for_each_row(copy, usable_, pid, fn);
}

template <class Pool>
uint64_t BasicHeapFile<Pool>::sum_one_page(BlockId block, size_t offset, ScanRead read) const {
  const PageId pid(space_, block);
  uint64_t sum = 0;
  if (read == ScanRead::kShared) {
    SharedGuard g = pool_->pin_shared(pid);
    if (!heap_detail::heap_racy_sum_page(g.data(), usable_, offset, &sum)) {
      heap_detail::corrupt(pid, "data page breaks the page invariants");
    }
    return sum;
  }
  auto [ok, page_sum] = pool_->optimistic_read(pid, [&](const std::byte* p) {
    uint64_t s = 0;
    bool ok = heap_detail::heap_racy_sum_page(p, usable_, offset, &s);
    return std::pair<bool, uint64_t>(ok, s);
  });
  if (!ok) heap_detail::corrupt(pid, "data page breaks the page invariants");  // validated (or pinned) bytes
  return page_sum;
}

template <class Pool>
void BasicHeapFile<Pool>::scan_sequential(const RowFn& fn, ScanOptions opts) const {
  std::vector<std::byte> copy(usable_);  // one private page per scan (fn may scan too)
  for_each_page(nullptr, opts, [&](BlockId b) { scan_one_page(b, fn, opts.read, copy.data()); });
}

template <class Pool>
void BasicHeapFile<Pool>::scan_pages(std::span<const BlockId> order, const RowFn& fn, ScanOptions opts) const {
  std::vector<std::byte> copy(usable_);
  for_each_page(&order, opts, [&](BlockId b) { scan_one_page(b, fn, opts.read, copy.data()); });
}

template <class Pool>
void BasicHeapFile<Pool>::check_column(size_t offset) const {
  if (offset > max_row_bytes() || max_row_bytes() - offset < 8) {
    throw Error(ErrorCode::kInvalidArgument, "column offset " + std::to_string(offset) +
                                                 " + 8 exceeds the longest row (" + std::to_string(max_row_bytes()) + ")");
  }
}

template <class Pool>
int64_t BasicHeapFile<Pool>::sum_column(size_t offset, ScanOptions opts) const {
  check_column(offset);
  uint64_t sum = 0;
  for_each_page(nullptr, opts, [&](BlockId b) { sum += sum_one_page(b, offset, opts.read); });
  return static_cast<int64_t>(sum);
}

template <class Pool>
int64_t BasicHeapFile<Pool>::sum_column(size_t offset, std::span<const BlockId> order, ScanOptions opts) const {
  check_column(offset);
  uint64_t sum = 0;
  for_each_page(&order, opts, [&](BlockId b) { sum += sum_one_page(b, offset, opts.read); });
  return static_cast<int64_t>(sum);
}

}  // namespace calico::index
