// VmcacheTable: see vmcache.h.
#include "translation/vmcache.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::translation {
namespace {

constexpr size_t kUserAddressSpace = size_t{1} << 47;  // x86-64 user space without a hint
constexpr size_t kSlackBytes = 2 * kVmcacheChunkBytes;  // room to align, >= 4 KB each side
constexpr size_t kPmdSpan = size_t{1} << 30;            // one PMD table maps 1 GB
constexpr size_t kPudSpan = size_t{1} << 39;            // one PUD table maps 512 GB

// Reserves `bytes` of address space for a space, or says why and how many would fit.
memory::VirtualRegion reserve_for_space(size_t bytes, size_t space_bytes, const char* what) {
  try {
    return memory::VirtualRegion::reserve(bytes);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("vmcache: cannot reserve the ") + what + " of a space (" + e.what() +
                    "); a space reserves " + std::to_string(space_bytes >> 20) +
                    " MB of address space until the pool closes, so at most " +
                    std::to_string(kUserAddressSpace / space_bytes) +
                    " such spaces fit in the 128 TB user address space: lower max_blocks_per_space");
  }
}

}  // namespace

VmcacheTable::VmcacheTable(uint64_t capacity, size_t page_size, OsPages os_pages)
    : capacity_(capacity), page_size_(page_size) {
  if (capacity == 0 || capacity > (uint64_t{1} << 32)) {
    throw Error(ErrorCode::kInvalidArgument,
                "space capacity " + std::to_string(capacity) + " blocks is not in 1 .. 2^32");
  }
  if (page_size != 4096 && page_size != 8192 && page_size != 16384) {
    throw Error(ErrorCode::kInvalidArgument,
                "page size " + std::to_string(page_size) + " is not 4096, 8192 or 16384");
  }
  data_bytes_ = capacity * page_size;
  uint64_t chunks = (data_bytes_ + kVmcacheChunkBytes - 1) / kVmcacheChunkBytes;
  size_t touched_bytes = (chunks + 63) / 64 * sizeof(uint64_t);
  size_t space_bytes = data_bytes_ + kSlackBytes + capacity * sizeof(Entry) + touched_bytes;

  // The largest reservation first: when the address space is exhausted, nothing else is taken.
  data_region_ = reserve_for_space(data_bytes_ + kSlackBytes, space_bytes, "data region");
  state_region_ = reserve_for_space(capacity * sizeof(Entry), space_bytes, "state array");
  touched_region_ = reserve_for_space(touched_bytes, space_bytes, "page-table bitmap");
  auto raw = reinterpret_cast<uintptr_t>(data_region_.data());
  uintptr_t aligned = (raw + memory::kOsPageBytes + kVmcacheChunkBytes - 1) & ~(kVmcacheChunkBytes - 1);
  data_offset_ = aligned - raw;
  data_ = data_region_.data() + data_offset_;
  CALICO_CHECK(data_offset_ + data_bytes_ + memory::kOsPageBytes <= data_region_.size());
  // VirtualRegion::reserve made the whole reservation MADV_NOHUGEPAGE; the 2 MB variant
  // turns the aligned data range (and only it: the slack keeps it a mapping of its own) to
  // MADV_HUGEPAGE.
  if (os_pages == OsPages::kHuge && madvise(data_, data_bytes_, MADV_HUGEPAGE) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("vmcache_2m: madvise(MADV_HUGEPAGE) failed (transparent huge pages "
                            "not supported by this kernel?): ") + std::strerror(errno));
  }
  states_ = reinterpret_cast<Entry*>(state_region_.data());
  touched_ = reinterpret_cast<std::atomic<uint64_t>*>(touched_region_.data());
}

void VmcacheTable::acquire_ref(BlockId block) const {
  uint64_t chunk = static_cast<uint64_t>(block) * page_size_ / kVmcacheChunkBytes;
  std::atomic<uint64_t>& word = touched_word(chunk);
  uint64_t bit = uint64_t{1} << (chunk % 64);
  // Set once per chunk: later faults in the chunk only load the word.
  if ((word.load(std::memory_order_relaxed) & bit) == 0) word.fetch_or(bit, std::memory_order_relaxed);
}

void VmcacheTable::discard(BlockId block) {
  CALICO_DCHECK(block < capacity_);
  data_region_.punch(data_offset_ + static_cast<size_t>(block) * page_size_, page_size_);
}

void VmcacheTable::discard_range(BlockId block, uint32_t count) {
  CALICO_DCHECK(count > 0 && uint64_t{block} + count <= capacity_);
  data_region_.punch(data_offset_ + static_cast<size_t>(block) * page_size_, size_t{count} * page_size_);
}

void VmcacheTable::reset() {
  state_region_.reset();
  data_region_.reset();
  touched_region_.reset();
}

PageTableUse VmcacheTable::touched_tables(uint64_t limit_blocks) const {
  PageTableUse use;
  uint64_t chunks = chunks_of(std::min(limit_blocks, capacity_));
  uintptr_t last_pmd = UINTPTR_MAX, last_pud = UINTPTR_MAX;
  for (uint64_t w = 0; w * 64 < chunks; ++w) {
    uint64_t bits = touched_[w].load(std::memory_order_relaxed);
    while (bits != 0) {
      uint64_t chunk = w * 64 + static_cast<uint64_t>(std::countr_zero(bits));
      bits &= bits - 1;
      if (chunk >= chunks) break;
      ++use.pte_tables;
      // Upper levels are counted by absolute address: tables are shared with whatever else
      // lies in the same 1 GB / 512 GB of address space. Chunks come in increasing order.
      uintptr_t va = reinterpret_cast<uintptr_t>(data_) + chunk * kVmcacheChunkBytes;
      if (va / kPmdSpan != last_pmd) ++use.pmd_tables, last_pmd = va / kPmdSpan;
      if (va / kPudSpan != last_pud) ++use.pud_tables, last_pud = va / kPudSpan;
    }
  }
  return use;
}

PageTableUse VmcacheTable::page_tables(uint64_t limit_blocks) const {
  PageTableUse use = touched_tables(limit_blocks);
  size_t len = std::min(limit_blocks, capacity_) * page_size_;
  use.present_pages = data_region_.resident_bytes(data_offset_, len) / memory::kOsPageBytes;
  use.huge_pages = std::min<uint64_t>(data_huge_page_bytes() / kVmcacheChunkBytes, use.present_pages / 512);
  return use;
}

size_t VmcacheTable::private_bytes(uint64_t limit_blocks) const {
  return state_region_.private_bytes(0, std::min(limit_blocks, capacity_) * sizeof(Entry)) +
         touched_tables(limit_blocks).table_bytes();
}

size_t VmcacheTable::mincore_bytes(uint64_t limit_blocks) const {
  return state_region_.resident_bytes(0, std::min(limit_blocks, capacity_) * sizeof(Entry)) +
         touched_tables(limit_blocks).table_bytes();
}

size_t VmcacheTable::reserved_bytes() const {
  return state_region_.size() + data_region_.size() + touched_region_.size();
}

size_t VmcacheTable::data_resident_bytes(uint64_t blocks) const {
  return data_region_.resident_bytes(data_offset_, std::min(blocks, capacity_) * page_size_);
}

size_t VmcacheTable::data_huge_page_bytes() const {
  return memory::smaps_bytes(data_, data_bytes_, "AnonHugePages");
}

}  // namespace calico::translation
