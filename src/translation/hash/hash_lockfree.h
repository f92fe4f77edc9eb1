// HashLockFreeTranslation ("hash_lockfree"): a lock-free linear-probing hash table from block
// number to entry per space, with no latch at all (the "Lock-Free Linear Probing Hash Map"
// of [Calico] section 6.2, which is not partitioned).
//
// Entry points: entry(block) (find-or-insert; the hot path), size()/slots()/max_size(),
// reset(), private_bytes()/mincore_bytes()/reserved_bytes(), for_each_entry().
//
// Layout: a power-of-two array of 16-byte slots {atomic key, Entry} (four per cache line,
// never straddling one), reserved with MAP_NORESERVE (memory/virtual_region.h) and backed by
// the OS on first write, so the zero page is an empty table: key 0 = empty slot, key b + 1 =
// block b; its Entry starts zero (evicted) with no initialisation.
//
// Protocol (Preshing's "world's simplest lock-free hash table", insert-only):
//   lookup   from slot mix64(block) & mask, probe forward: key == b + 1 -> that slot's entry;
//            key == 0 -> the block has no slot yet: insert there.
//   insert   reserve one unit of the load budget (size_ < max_size_, else kPoolFull), then
//            CAS the slot's key 0 -> b + 1. Won: the slot is the block's. Lost to the same
//            key: that slot is the block's (give the budget back). Lost to another key: give
//            the budget back and keep probing.
// Invariants:
//   I1 a key, once written, stays in its slot until reset(): slots are never deleted.
//   I2 each block has at most one slot. A thread claims only the first empty slot on the
//      block's probe path, and every earlier slot on that path held another key (I1), so
//      two claimants of one block meet at the same first empty slot and one CAS wins.
//   I3 entry(b) returns the same Entry for the table's life (I1, I2; the array never moves).
//   I4 size_ <= max_size_ < slots: an empty slot always remains, so a probe ends within
//      one sweep; no lookup or insert loops forever, and none overwrites another key.
//
// Sizing (fixed; a lock-free table cannot rehash under readers that hold Entry pointers):
//   slots    = the smallest power of two >= 2 x capacity (the space's block limit,
//              PoolOptions::max_blocks_per_space), at least kMinSlots = 4, at most
//              kMaxSlots = 2^28 (4 GB of address space, of which only touched 4 KB pages
//              cost memory)
//   max_size = 3/4 of the slots: linear probing stays short (about 2.5 probes per hit and
//              8.5 per miss at that load, 1.5 and 2.5 at 1/2).
// With max_blocks_per_space <= 2^27 the table can never fill (it holds 1.5 x every block).
// With the default 2^32 it fills after 3 x 2^26 ~ 201M distinct pages touched (768 GB of
// 4 KB pages): entry() then throws kPoolFull for every new block (blocks that have a slot
// keep working). At the moment the budget runs out, a thread inserting the same block as the
// thread that takes the last unit may also get kPoolFull.
//
// Deviation (unlike partitioned_table.h, which deletes on eviction): entries are never
// removed, so memory grows with the pages ever touched, and since mix64 scatters blocks over
// the slots, each page touched backs a 4 KB page of slots until the table is dense: memory is
// about min(4 KB x pages touched, 16 B x slots) (the paper sizes its tables 2x the frames and
// deletes on eviction; [Calico] 6.5). Measured at capacity 2^22 (2^23 slots, 128 MB
// reserved): 4 MB after 10^3 pages touched, 122 MB after 10^5, 128 MB from 10^6 on. So keep
// max_blocks_per_space close to the space's real size for this table: each block of
// capacity costs 32 bytes once the table is dense. reset() (drop_space) returns the memory like an
// array: the mapping stays, so a thread with a stale pointer reads zero (an empty slot or an
// evicted entry), never freed memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calico/checks.h"
#include "calico/page_id.h"
#include "calico/options.h"
#include "memory/virtual_region.h"
#include "translation/entry.h"
#include "translation/hash/hash_support.h"

namespace calico::translation {

class LockFreeHashTable {
 public:
  static constexpr uint64_t kMinSlots = 4;
  static constexpr uint64_t kMaxSlots = uint64_t{1} << 28;

  // Sized by the rule above. Errors: kInvalidArgument (capacity not in 1 .. 2^32).
  LockFreeHashTable(uint64_t capacity, const PoolOptions&) : LockFreeHashTable(capacity, kMaxSlots) {}
  // With another slot limit (tests: a table small enough to fill). Errors: kInvalidArgument
  // (capacity not in 1 .. 2^32, max_slots not a power of two in 4 .. 2^32).
  LockFreeHashTable(uint64_t capacity, uint64_t max_slots);

  // The entry of `block`, created zero (evicted) on first use; the same object for the
  // table's life (I3). Lock-free: a hit is a probe of one or a few slots, no write.
  // Errors: kPoolFull when the block has no slot yet and the table holds max_size() blocks.
  Entry& entry(BlockId block) {
    CALICO_DCHECK(block < capacity_);
    const uint64_t key = uint64_t{block} + 1;
    uint64_t i = mix64(block) & mask_;
    for (uint64_t probes = 0; probes <= mask_; ++probes, i = (i + 1) & mask_) {
      const uint64_t k = slots_[i].key.load(std::memory_order_acquire);
      if (k == key) [[likely]] return slots_[i].entry;
      if (k == 0) return insert(block, i);
    }
    throw_full(block);  // unreachable while I4 holds
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t slots() const { return mask_ + 1; }
  uint64_t max_size() const { return max_size_; }
  // Blocks with a slot (pages touched since the last reset); includes inserts in progress.
  uint64_t size() const { return size_.load(std::memory_order_relaxed); }

  // fn(BlockId, const Entry&) for every block with a slot, in slot order: for checkers and
  // tests. Concurrent inserts may or may not be seen.
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (uint64_t i = 0; i <= mask_; ++i) {
      const uint64_t k = slots_[i].key.load(std::memory_order_acquire);
      if (k != 0) fn(static_cast<BlockId>(k - 1), slots_[i].entry);
    }
  }

  // No reclamation around resident entries: slots are never removed.
  void acquire_ref(BlockId) const {}
  bool release_ref(BlockId) const { return false; }

  // Every slot empty and its memory returned to the OS. Pre: every entry is zero and no
  // thread writes one concurrently (drop_space holds the space dead); stale readers are
  // safe (see above).
  void reset();

  // Measured like a TranslationArray (the slot array is a VirtualRegion), over the whole
  // array: `limit_blocks` does not apply, blocks are scattered.
  size_t private_bytes(uint64_t /*limit_blocks*/) const { return region_.private_bytes(0, region_.size()); }
  size_t mincore_bytes(uint64_t /*limit_blocks*/) const { return region_.resident_bytes(0, region_.size()); }
  size_t reserved_bytes() const { return region_.size(); }

 private:
  struct alignas(16) Slot {
    std::atomic<uint64_t> key;  // 0 = empty, else block + 1
    Entry entry;
  };
  static_assert(sizeof(Slot) == 16 && 64 % sizeof(Slot) == 0, "slots never straddle a cache line");

  // The insert protocol above, from `i`, the first empty slot seen on the block's path.
  Entry& insert(BlockId block, uint64_t i);
  [[noreturn]] void throw_full(BlockId block) const;

  const uint64_t capacity_;
  uint64_t mask_;      // slots - 1
  uint64_t max_size_;  // 3/4 of the slots
  memory::VirtualRegion region_;
  Slot* slots_;
  std::atomic<uint64_t> size_{0};  // load budget taken (blocks inserted + inserts in flight)
};

struct HashLockFreeTranslation {
  static constexpr std::string_view kName = "hash_lockfree";
  using Table = LockFreeHashTable;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
