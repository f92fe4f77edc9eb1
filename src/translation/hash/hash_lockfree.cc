// LockFreeHashTable: see hash_lockfree.h.
#include "translation/hash/hash_lockfree.h"

#include <algorithm>
#include <bit>
#include <string>

#include "calico/error.h"

namespace calico::translation {

LockFreeHashTable::LockFreeHashTable(uint64_t capacity, uint64_t max_slots)
    : capacity_(check_table_capacity(capacity, "lock-free hash table")) {
  if (max_slots < kMinSlots || max_slots > (uint64_t{1} << 32) || !std::has_single_bit(max_slots)) {
    throw Error(ErrorCode::kInvalidArgument,
                "lock-free hash table: slot limit " + std::to_string(max_slots) +
                    " is not a power of two in 4 .. 2^32");
  }
  const uint64_t slots = std::min(std::max(std::bit_ceil(2 * capacity), kMinSlots), max_slots);
  mask_ = slots - 1;
  max_size_ = slots / 4 * 3;
  region_ = memory::VirtualRegion::reserve(slots * sizeof(Slot));
  slots_ = reinterpret_cast<Slot*>(region_.data());
  CALICO_CHECK(max_size_ < slots);  // I4
}

Entry& LockFreeHashTable::insert(BlockId block, uint64_t i) {
  const uint64_t key = uint64_t{block} + 1;
  for (uint64_t probes = 0; probes <= mask_; ++probes, i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return s.entry;
    if (k != 0) continue;
    // The first empty slot on the path: the block has none (I1, I2). Take budget (I4).
    if (size_.fetch_add(1, std::memory_order_relaxed) >= max_size_) {
      size_.fetch_sub(1, std::memory_order_relaxed);
      throw_full(block);
    }
    if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return s.entry;  // zero since the reserve or the last reset (no check: once the key is
                       // published, other threads may already be using the entry)
    }
    size_.fetch_sub(1, std::memory_order_relaxed);
    if (k == key) return s.entry;  // another thread inserted the same block here
  }
  throw_full(block);  // unreachable while I4 holds
}

void LockFreeHashTable::throw_full(BlockId block) const {
  throw Error(ErrorCode::kPoolFull,
              "lock-free hash table full: block " + std::to_string(block) + " has no slot and " +
                  std::to_string(max_size_) + " of " + std::to_string(mask_ + 1) +
                  " slots are taken (slots are never freed; with max_blocks_per_space at most " +
                  std::to_string(max_size_) + " every block fits)");
}

void LockFreeHashTable::reset() {
  if constexpr (CALICO_PARANOID) {
    for (uint64_t i = 0; i <= mask_; ++i) CALICO_CHECK(slots_[i].entry.load() == 0);
  }
  region_.reset();
  size_.store(0, std::memory_order_relaxed);
}

}  // namespace calico::translation
