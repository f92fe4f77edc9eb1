// HashOpenTranslation ("hash_open"): an open-addressing hash table (absl::flat_hash_map, the
// "absl::flat_hash" competitor of [Calico] sections 2, 3 and 6) from block number to entry
// per space, in 64 partitions with one reader-writer latch each (partitioned_table.h).
//
// A lookup: mix64(block) (hash_support.h) -> partition (top 6 bits) -> latch shared -> the
// map's SSE2 group probe on the control bytes (the hash is passed in, not recomputed) -> the
// slot {block, Entry*} -> the entry. Like a chained table it costs two dependent misses (the
// slot, then the entry) plus the latch; unlike it, the slots are contiguous.
//
// Entries and deletion: flat_hash_map moves its slots when it grows, so it cannot hold the
// Entry itself (the pool keeps Entry pointers without the latch). It maps the block to an
// OwnedEntry* into the partition's EntrySlab (entry_slab.h): chunked arrays that never move,
// whose entries are recycled (never freed) once retired. A page's entry is removed from the
// map when the page is evicted (retire(), under the exclusive latch) and the OwnedEntry goes
// to the slab's free list for the next block inserted (entry.h, "Recycled entries": R1-R5).
// The alternative, a 4-byte slab index instead of the pointer, would shrink a slot from 16
// to 8 bytes but add a dependent load of the chunk's address to every lookup.
//
// Memory (counted by CountingAllocator): per slot 16 bytes (4-byte key padded, 8-byte
// pointer) and 1 control byte, at a load factor between 1/4 and 7/8 (absl grows at 7/8 and
// doubles; shrink_map() rehashes a map a quarter full to fit), so the slots follow the
// entries alive now; per entry 16 bytes of slab and 8 of free list, which follow the entries
// alive at the peak (about the pool's frames: resident, loading and prefetched pages). So 42
// to 63 bytes per live entry at the peak, and 24 per entry of the peak plus 19 to 68 per
// entry alive after it.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string_view>
#include <utility>

#include "translation/hash/counting_allocator.h"
#include "translation/entry.h"
#include "translation/hash/entry_slab.h"
#include "translation/hash/hash_support.h"
#include "translation/hash/partitioned_table.h"

namespace calico::translation {

// One partition's map and slab; see PartitionedTable for the Store contract and latching.
class OpenStore {
 public:
  explicit OpenStore(ByteCounter* counter)
      : map_(0, BlockHash{}, std::equal_to<BlockId>{}, Allocator(counter)), slab_(counter) {}

  Entry* find(BlockId block, uint64_t hash) const {
    auto it = map_.find(block, static_cast<size_t>(hash));  // absl: a precomputed hash
    return it == map_.end() ? nullptr : &it->second->word;
  }
  Entry& find_or_insert(BlockId block) {
    if (auto it = map_.find(block); it != map_.end()) return it->second->word;
    OwnedEntry& e = slab_.take();
    try {
      map_.emplace(block, &e);
    } catch (...) {
      e.word.store(kGoneWord.raw, std::memory_order_relaxed);  // recycled: was gone; new: unseen
      slab_.give_back(e);
      throw;
    }
    e.owner.store(owner_key(block), std::memory_order_release);  // R3: owner, then word
    e.word.store(0, std::memory_order_release);
    return e.word;
  }
  // R2: removes block's entry if it is zero. Pre: exclusive latch.
  bool retire(BlockId block) {
    auto it = map_.find(block);
    if (it == map_.end() || !try_cas(it->second->word, EntryWord{0}, kGoneWord)) return false;
    OwnedEntry* e = it->second;
    map_.erase(it);
    slab_.give_back(*e);
    shrink_map();
    return true;
  }
  size_t size() const { return map_.size(); }
  size_t free_size() const { return slab_.free_size(); }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [block, e] : map_) fn(block, e->word);
  }

 private:
  // The map follows its content (absl keeps its capacity on erase): once a quarter full it
  // is rehashed to fit, so that a table left by a moving hot set (array_sparse's side table
  // on read-latest) returns its slots. Amortised O(1): a shrunk map is at least 7/16 full,
  // so the next shrink waits for 3/4 of its entries to go. Only the 17-byte slots are
  // returned; the slab's entries are type-stable (entry_slab.h). Optional: skipped if the
  // smaller array cannot be allocated.
  void shrink_map() noexcept {
    constexpr size_t kKeepCapacity = 127;  // a handful of entries never rehashes
    if (map_.capacity() <= kKeepCapacity || map_.size() * 4 >= map_.capacity()) return;
    try {
      map_.rehash(0);
    } catch (const std::bad_alloc&) {
    }
  }

  using Allocator = CountingAllocator<std::pair<const BlockId, OwnedEntry*>>;
  absl::flat_hash_map<BlockId, OwnedEntry*, BlockHash, std::equal_to<BlockId>, Allocator> map_;
  EntrySlab slab_;
};

struct HashOpenTranslation {
  static constexpr std::string_view kName = "hash_open";
  using Table = PartitionedTable<OpenStore>;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
