// TranslationArray: the last-level array of one space: block number -> Entry, plus the
// hole-punch counters that return cold pages of entries to the OS.
//
// Entry points: entry(), acquire_ref()/release_ref() (hole-punch protocol), reset(),
// private_bytes()/mincore_bytes() (measured memory), reserved_bytes().
//
// Memory: capacity entries of 8 bytes reserved with MAP_NORESERVE (32 GB of address space
// for the full 2^32 blocks), never initialised by writing: the zero page reads as "evicted".
// One 32-bit counter per 4 KB page of entries (512 entries), also lazily backed.
// Thread safety: entries and counters are atomics; see entry.h and hole_punch_counter.h for
// the protocols. reset() requires that no thread holds a reference (the pool guarantees it
// when a space is dropped).
#pragma once

#include <cstddef>
#include <cstdint>

#include "calico/page_id.h"
#include "calico/options.h"
#include "memory/virtual_region.h"
#include "translation/entry.h"
#include "translation/array/hole_punch_counter.h"

namespace calico::translation {

inline constexpr size_t kEntriesPerGroup = memory::kOsPageBytes / sizeof(Entry);  // 512
static_assert(kEntriesPerGroup == 512);

class TranslationArray {
 public:
  // Reserves room for `capacity` blocks (1 .. 2^32). Errors: kInvalidArgument.
  explicit TranslationArray(uint64_t capacity);
  TranslationArray(uint64_t capacity, const PoolOptions&) : TranslationArray(capacity) {}

  Entry& entry(BlockId block) const { return entries_[block]; }
  Entry* entries() const { return entries_; }
  uint64_t capacity() const { return capacity_; }

  // Hole-punch references for the page of entries holding `block` (hole_punch_counter.h).
  void acquire_ref(BlockId block) const { acquire_punch_ref(counter(block)); }
  // Returns true when this release punched the page of entries.
  bool release_ref(BlockId block);
  // After a CAS on block's entry failed and the entry reads zero: the page of entries is
  // punched again if nothing references it (hole_punch_counter.h, repunch_punch_page).
  // Returns true if it punched.
  bool repunch(BlockId block) { return repunch_punch_page(counter(block), [&] { punch_group(block); }); }

  // Whether the OS backs `block`'s page of entries with a private page (checkers: a page
  // whose group holds no reference must not be backed, hole_punch_counter.h I1).
  bool page_backed(BlockId block) const {
    return entry_region_.private_bytes(static_cast<size_t>(block / kEntriesPerGroup) * memory::kOsPageBytes,
                                       memory::kOsPageBytes) > 0;
  }

  // Current count of `block`'s group (tests and checkers).
  uint32_t group_count(BlockId block) const {
    return counter(block).load(std::memory_order_acquire) & kPunchCountMask;
  }

  // For tables built on the array (sparse_array.h): the counter of `block`'s group, and the
  // punch of that group's page of entries. Pre (punch_group): every entry of the group is
  // zero and nobody writes one (the caller holds the group's punch lock or its move flag).
  PunchCounter& counter(BlockId block) const { return counters_[block / kEntriesPerGroup]; }
  void punch_group(BlockId block);

  // Drops every entry and counter page: memory and page tables go back to the OS; the
  // array then reads all-zero. Pre: no references held, no thread writes concurrently.
  void reset();

  // Memory of the entries and counters for blocks [0, limit_blocks): private pages
  // (pagemap; what it really costs) and what mincore reports (counts zero-page mappings).
  size_t private_bytes(uint64_t limit_blocks) const;
  size_t mincore_bytes(uint64_t limit_blocks) const;
  size_t reserved_bytes() const { return entry_region_.size() + counter_region_.size(); }

 private:
  size_t counter_bytes(uint64_t limit_blocks) const;

  uint64_t capacity_;
  memory::VirtualRegion entry_region_;
  memory::VirtualRegion counter_region_;
  Entry* entries_;
  PunchCounter* counters_;
};

}  // namespace calico::translation
