// HashChainedTranslation ("hash_chained"): a chained hash table (std::unordered_map) from
// block number to entry per space, in 64 partitions with one reader-writer latch each
// (partitioned_table.h). The "std::unordered" competitor of [Calico] sections 2 and 6.2.
//
// A lookup: mix64(block) (hash_support.h) -> partition (top 6 bits) -> latch shared ->
// bucket (hash mod a prime bucket count) -> a chain of nodes -> the node's entry. That is
// two dependent misses beyond the array's one (bucket, then node), plus the latch's atomic
// add and release on a shared cache line.
//
// Entries and deletion: the entry (an OwnedEntry, entry.h) lives inside the map's node, and
// unordered_map never moves a node (a rehash relinks nodes into a new bucket array). When a
// page is evicted its node is taken out of the map with extract() (retire(), under the
// exclusive latch) and kept, with its entry parked in the kGone state, in a free list of node
// handles; the next insert of any block re-keys such a node and puts it back with insert().
// Node memory is therefore recycled, never freed while the table lives, and the entry inside
// is never destroyed or constructed again, only written through its atomics: a thread holding
// a stale Entry* reads a valid atomic and checks the owner (entry.h, "Recycled entries").
// Only the key, which no thread reads outside the latch, is written plainly.
//
// Memory (counted by CountingAllocator) follows the entries alive at the peak, about the
// pool's frames (partitioned_table.h): per entry one node of 32 bytes (next pointer, 4-byte
// key padded to 8, 16-byte OwnedEntry; BlockHash is "fast", so libstdc++ caches no hash code
// in the node), plus 8 bytes per bucket (max load factor 1, so at least one bucket per entry;
// growth to the next prime past 2x leaves up to ~2.2; buckets are never shrunk): 40 to 50
// bytes per live entry, plus malloc's header per node; and a 32-byte node handle per free
// node (pointer and allocator; its vector grows 2x + 16), free nodes being those of the
// partitions' peaks not in use now.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "calico/checks.h"
#include "translation/hash/counting_allocator.h"
#include "translation/entry.h"
#include "translation/hash/hash_support.h"
#include "translation/hash/partitioned_table.h"

namespace calico::translation {

// One partition's map; see PartitionedTable for the Store contract and the latching.
class ChainedStore {
 public:
  explicit ChainedStore(ByteCounter* counter)
      : map_(0, BlockHash{}, std::equal_to<BlockId>{}, Allocator(counter)), free_(FreeAllocator(counter)) {}

  Entry* find(BlockId block, uint64_t /*hash*/) const {
    auto it = map_.find(block);
    return it == map_.end() ? nullptr : &it->second.word;
  }
  Entry& find_or_insert(BlockId block) {
    if (auto it = map_.find(block); it != map_.end()) return it->second.word;
    Map::iterator it;
    if (free_.empty()) {
      it = map_.try_emplace(block).first;  // a new node: word 0, owner 0
    } else {
      // Reuse a retired node: its entry stays where it is, gone, until the owner is set.
      Map::node_type& node = free_.back();
      node.key() = block;
      Map::insert_return_type r = map_.insert(std::move(node));  // on a throw, node is kept
      CALICO_DCHECK(r.inserted);
      free_.pop_back();  // now empty
      it = r.position;
    }
    OwnedEntry& e = it->second;
    e.owner.store(owner_key(block), std::memory_order_release);  // R3: owner, then word
    e.word.store(0, std::memory_order_release);
    return e.word;
  }
  // R2: removes block's entry if it is zero. Pre: exclusive latch.
  bool retire(BlockId block) {
    auto it = map_.find(block);
    if (it == map_.end()) return false;
    if (free_.size() == free_.capacity()) {
      try {
        free_.reserve(2 * free_.size() + 16);
      } catch (const std::bad_alloc&) {
        return false;  // the entry stays, zero: a valid state
      }
    }
    if (!try_cas(it->second.word, EntryWord{0}, kGoneWord)) return false;
    free_.push_back(map_.extract(it));  // capacity reserved: no throw
    return true;
  }
  size_t size() const { return map_.size(); }
  size_t free_size() const { return free_.size(); }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (auto& [block, e] : map_) fn(block, e.word);
  }

 private:
  using Allocator = CountingAllocator<std::pair<const BlockId, OwnedEntry>>;
  using Map = std::unordered_map<BlockId, OwnedEntry, BlockHash, std::equal_to<BlockId>, Allocator>;
  using FreeAllocator = CountingAllocator<typename Map::node_type>;
  // mutable: find() hands out a non-const Entry (the entry is an atomic any thread writes;
  // the map's structure is only changed under the exclusive latch).
  mutable Map map_;
  std::vector<typename Map::node_type, FreeAllocator> free_;  // retired nodes, entries gone
};

struct HashChainedTranslation {
  static constexpr std::string_view kName = "hash_chained";
  using Table = PartitionedTable<ChainedStore>;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
