// HashChainedTranslation ("hash_chained"): a chained hash table (std::unordered_map) from
// block number to entry per space, in 64 partitions with one reader-writer latch each
// (partitioned_table.h). The "std::unordered" competitor of calico.txt sections 2 and 6.2.
//
// A lookup: mix64(block) (hash_support.h) -> partition (top 6 bits) -> latch shared ->
// bucket (hash mod a prime bucket count) -> a chain of nodes -> the node's entry. That is
// two dependent misses beyond the array's one (bucket, then node), plus the latch's atomic
// add and release on a shared cache line.
//
// Stable entries: the Entry lives inside the map's node, and unordered_map never moves a node
// (a rehash relinks nodes into a new bucket array), so the address handed out by entry() is
// valid until the node is erased, and nodes are never erased (partitioned_table.h states the
// design constraint and its cost: memory grows with the pages ever touched).
//
// Memory (counted by CountingAllocator): per entry one node of 24 bytes (next pointer,
// 4-byte key padded to 8, 8-byte entry; BlockHash is "fast", so libstdc++ caches no hash
// code in the node), plus 8 bytes per bucket (max load factor 1, so at least one bucket per
// entry; growth to the next prime past 2x leaves up to ~2.2): 32 to 42 bytes per page touched
// (35 measured at 10^6 pages), plus malloc's header per node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "translation/counting_allocator.h"
#include "translation/entry.h"
#include "translation/hash_support.h"
#include "translation/partitioned_table.h"

namespace calico::translation {

// One partition's map; see PartitionedTable for the Store contract and the latching.
class ChainedStore {
 public:
  explicit ChainedStore(ByteCounter* counter)
      : map_(0, BlockHash{}, std::equal_to<BlockId>{}, Allocator(counter)) {}

  Entry* find(BlockId block, uint64_t /*hash*/) const {
    auto it = map_.find(block);
    return it == map_.end() ? nullptr : &it->second;
  }
  Entry& find_or_insert(BlockId block) { return map_.try_emplace(block, uint64_t{0}).first->second; }
  size_t size() const { return map_.size(); }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (auto& [block, e] : map_) fn(block, e);
  }

 private:
  using Allocator = CountingAllocator<std::pair<const BlockId, Entry>>;
  // mutable: find() hands out a non-const Entry (the entry is an atomic any thread writes;
  // the map's structure is only changed under the exclusive latch).
  mutable std::unordered_map<BlockId, Entry, BlockHash, std::equal_to<BlockId>, Allocator> map_;
};

struct HashChainedTranslation {
  static constexpr std::string_view kName = "hash_chained";
  using Table = PartitionedTable<ChainedStore>;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
