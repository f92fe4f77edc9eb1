// HashOpenTranslation ("hash_open"): an open-addressing hash table (absl::flat_hash_map, the
// "absl::flat_hash" competitor of calico.txt sections 2, 3 and 6) from block number to entry
// per space, in 64 partitions with one reader-writer latch each (partitioned_table.h).
//
// A lookup: mix64(block) (hash_support.h) -> partition (top 6 bits) -> latch shared -> the
// map's SSE2 group probe on the control bytes (the hash is passed in, not recomputed) -> the
// slot {block, Entry*} -> the entry. Like a chained table it costs two dependent misses (the
// slot, then the entry) plus the latch; unlike it, the slots are contiguous.
//
// Stable entries: flat_hash_map moves its slots when it grows, so it cannot hold the Entry
// itself (the pool keeps Entry pointers; partitioned_table.h). It maps the block to an Entry*
// into the partition's EntrySlab (entry_slab.h): chunked arrays that never move. The
// alternative, a 4-byte slab index instead of the pointer, would shrink a slot from 16 to 8
// bytes but add a dependent load of the chunk's address to every lookup. Entries are never
// removed (partitioned_table.h states the cost: memory grows with the pages ever touched).
//
// Memory (counted by CountingAllocator): per slot 16 bytes (4-byte key padded, 8-byte
// pointer) and 1 control byte, at a load factor between 7/16 and 7/8 (absl grows at 7/8 and
// doubles); per entry 8 bytes of slab. So 26 to 47 bytes per page touched (33 measured at
// 10^5 pages, 44 at 10^6).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include "translation/counting_allocator.h"
#include "translation/entry.h"
#include "translation/entry_slab.h"
#include "translation/hash_support.h"
#include "translation/partitioned_table.h"

namespace calico::translation {

// One partition's map and slab; see PartitionedTable for the Store contract and latching.
class OpenStore {
 public:
  explicit OpenStore(ByteCounter* counter)
      : map_(0, BlockHash{}, std::equal_to<BlockId>{}, Allocator(counter)), slab_(counter) {}

  Entry* find(BlockId block, uint64_t hash) const {
    auto it = map_.find(block, static_cast<size_t>(hash));  // absl: a precomputed hash
    return it == map_.end() ? nullptr : it->second;
  }
  Entry& find_or_insert(BlockId block) {
    if (auto it = map_.find(block); it != map_.end()) return *it->second;
    Entry& e = slab_.allocate();  // if emplace throws, the entry is merely unused
    map_.emplace(block, &e);
    return e;
  }
  size_t size() const { return map_.size(); }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [block, e] : map_) fn(block, *e);
  }

 private:
  using Allocator = CountingAllocator<std::pair<const BlockId, Entry*>>;
  absl::flat_hash_map<BlockId, Entry*, BlockHash, std::equal_to<BlockId>, Allocator> map_;
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
