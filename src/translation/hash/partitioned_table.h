// PartitionedTable<Store>: the per-space Table of the lock-based hash translations
// (hash_chained.h, hash_open.h): kPartitions independent hash maps, each behind its own
// reader-writer latch ([Calico] section 6.2: "we partition the hash table and use
// dedicated lock per partition to reduce lock contention").
//
// Entry points: entry(block) (find-or-insert; the hot path), find(block) (no insert),
// forget(block) (delete a zero entry; the pool calls it when a page leaves the pool), size(),
// free_size(), reset(), private_bytes()/mincore_bytes()/reserved_bytes() (bytes allocated),
// for_each_entry().
//
// Store (one per partition) provides, all under the partition latch:
//   explicit Store(ByteCounter*)        allocates only through a CountingAllocator on it
//   Entry* find(BlockId, uint64_t hash) const   (shared latch; hash == mix64(block))
//   Entry& find_or_insert(BlockId)              (exclusive latch; recycles a retired entry)
//   bool retire(BlockId)                        (exclusive latch; entry.h R2)
//   size_t size() const; size_t free_size() const; void for_each(fn) const  fn(BlockId, Entry&)
// and hands out only words of OwnedEntry objects that stay valid for the store's life
// (type-stable: recycled, never freed).
//
// Partitioning: block -> mix64(block) (hash_support.h); the top kPartitionBits bits pick the
// partition, the maps use the low bits, so the two choices are independent.
//
// Latch: std::shared_mutex per partition, cache-line aligned. Lookups of resident pages (the
// hot path) take it shared, so threads reading pages of one partition do not serialise
// behind each other; inserts (a page's first access since it was last evicted) and deletes
// take it exclusive. A spin lock would save nothing on the uncontended path
// (pthread_rwlock_rdlock is one atomic add, as a spin lock's CAS) and would serialise the
// readers. The latch is held for the lookup only, never across I/O or a page latch, and no
// other lock is taken under it (a retire only *tries* the entry word by CAS): it is a leaf of
// the pool's lock order (pool/README.md).
//
// Deletion (kRecyclesEntries; entry.h, "Recycled entries", R1-R5). As in a hash-table buffer
// manager, a page's mapping is deleted when the page leaves the pool: the pool zeroes the
// entry and calls forget(block), which retires it if it is still zero (CAS 0 -> kGone, out of
// the map) and parks it for reuse. So the maps hold the pages that are resident, being loaded
// or prefetched, plus entries created for pages that were then not loaded (only on the error
// paths of faults, each of which forgets too): about the pool's frames, not the pages ever
// touched ([Calico] 6.5 sizes the paper's tables at 2x the frames). Threads keep Entry
// pointers after the latch is released (pins, optimistic reads, the evictor's victims), so
// the pool checks the owner after every latch it takes through such a pointer and after
// every optimistic load (pool/README.md, "Recycled entries"); a recycled entry is the same
// object, so no memory is ever freed under a reader.
//
// reset() (drop_space): every entry is retired (they are zero: the pool discarded the
// frames), but nodes and slabs are kept until the pool closes: a thread with a stale pointer
// to the space (pool/README.md, "Dropping a space while others use it") may still hold or
// look up one of its entries; it sees kGone, looks up again, and fails in fault() with
// kUnknownSpace. The array translation returns the memory because its mapping survives a
// punch; a heap-allocated node does not survive a free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "calico/checks.h"
#include "calico/page_id.h"
#include "calico/options.h"
#include "translation/hash/counting_allocator.h"
#include "translation/entry.h"
#include "translation/hash/hash_support.h"

namespace calico::translation {

// PartitionBits: 6 (64 partitions, as shards go) for the hash translations; fewer where the
// table is off the hot path and its fixed size matters (the side table of sparse_array.h).
template <class Store, unsigned PartitionBits = 6>
class PartitionedTable {
 public:
  static constexpr unsigned kPartitionBits = PartitionBits;
  static constexpr size_t kPartitions = size_t{1} << kPartitionBits;
  // The partition that holds block's entry, and so the slab that recycles it (tests use it to
  // pick blocks whose entries are recycled into each other).
  static size_t partition_of(BlockId block) { return mix64(block) >> (64 - kPartitionBits); }

  // capacity: the space's block limit (entry() is never asked for a block at or past it).
  // Errors: kInvalidArgument (capacity not in 1 .. 2^32).
  PartitionedTable(uint64_t capacity, const PoolOptions&)
      : capacity_(check_table_capacity(capacity, "partitioned hash table")),
        partitions_(std::make_unique<Partition[]>(kPartitions)) {}

  // Entries are deleted when their page leaves the pool (see above).
  static constexpr bool kRecyclesEntries = true;

  // The entry of `block`, created zero (evicted) when the block has none. It stays block's
  // until the block is evicted and forget(block) retires it (then it may go to another block;
  // the caller checks owned_by, entry.h R4/R5). Takes the partition latch shared, and
  // exclusive only to insert.
  Entry& entry(BlockId block) {
    CALICO_DCHECK(block < capacity_);
    const uint64_t hash = mix64(block);
    Partition& p = partition(hash);
    {
      std::shared_lock lock(p.latch);
      if (Entry* e = p.store.find(block, hash)) [[likely]] return *e;
    }
    std::unique_lock lock(p.latch);
    return p.store.find_or_insert(block);
  }

  // The entry of `block` if it has one, else nullptr; never inserts (the pool's scans of
  // frames, which must not create entries for pages that left). Latch shared.
  Entry* find(BlockId block) const {
    CALICO_DCHECK(block < capacity_);
    const uint64_t hash = mix64(block);
    const Partition& p = partition(hash);
    std::shared_lock lock(p.latch);
    return p.store.find(block, hash);
  }

  // Deletes block's entry if it is zero (evicted); true when it did. Any thread may call it
  // at any time: a zero entry carries no latch, and the retire's CAS loses to a concurrent
  // fault's (entry.h R2). Called by the pool after each store of 0. Checks under the shared
  // latch first, so that the common case of an entry already reloaded costs no exclusive latch.
  bool forget(BlockId block) {
    CALICO_DCHECK(block < capacity_);
    const uint64_t hash = mix64(block);
    Partition& p = partition(hash);
    {
      std::shared_lock lock(p.latch);
      Entry* e = p.store.find(block, hash);
      if (e == nullptr || e->load(std::memory_order_relaxed) != 0) return false;
    }
    std::unique_lock lock(p.latch);
    return p.store.retire(block);
  }

  uint64_t capacity() const { return capacity_; }

  // No reclamation around resident entries (deletion is forget's).
  void acquire_ref(BlockId) const {}
  bool release_ref(BlockId) const { return false; }

  // Every entry retired; the memory stays until the table dies (see above).
  // Pre: no thread latches an entry concurrently (drop_space holds the space dead).
  void reset() {
    std::vector<BlockId> blocks;
    for (size_t i = 0; i < kPartitions; ++i) {
      std::unique_lock lock(partitions_[i].latch);
      blocks.clear();
      partitions_[i].store.for_each([&](BlockId b, [[maybe_unused]] Entry& e) {  // used by the level-2 check only
        CALICO_DCHECK(e.load(std::memory_order_relaxed) == 0);  // drop evicted every page
        blocks.push_back(b);
      });
      for (BlockId b : blocks) partitions_[i].store.retire(b);
    }
  }

  // Entries in the maps (pages resident, loading or prefetched, or just looked up).
  size_t size() const {
    size_t n = 0;
    for (size_t i = 0; i < kPartitions; ++i) {
      std::shared_lock lock(partitions_[i].latch);
      n += partitions_[i].store.size();
    }
    return n;
  }
  // Retired entries waiting to be recycled.
  size_t free_size() const {
    size_t n = 0;
    for (size_t i = 0; i < kPartitions; ++i) {
      std::shared_lock lock(partitions_[i].latch);
      n += partitions_[i].store.free_size();
    }
    return n;
  }

  // fn(BlockId, const Entry&) for every entry in the maps, partition by partition (each
  // under its latch shared): for checkers and tests.
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (size_t i = 0; i < kPartitions; ++i) {
      std::shared_lock lock(partitions_[i].latch);
      partitions_[i].store.for_each([&](BlockId b, const Entry& e) { fn(b, e); });
    }
  }

  // Translation memory: the partition array plus every byte the maps and slabs hold
  // (counting_allocator.h). All of it is heap memory the table has written, so private,
  // resident and reserved bytes are the same number; `limit_blocks` does not apply (a hash
  // table does not lay out blocks in order).
  size_t allocated_bytes() const {
    size_t bytes = kPartitions * sizeof(Partition);
    for (size_t i = 0; i < kPartitions; ++i) bytes += partitions_[i].bytes.bytes();
    return bytes;
  }
  size_t private_bytes(uint64_t /*limit_blocks*/) const { return allocated_bytes(); }
  size_t mincore_bytes(uint64_t /*limit_blocks*/) const { return allocated_bytes(); }
  size_t reserved_bytes() const { return allocated_bytes(); }

 private:
  struct alignas(64) Partition {
    mutable std::shared_mutex latch;
    ByteCounter bytes;
    Store store{&bytes};
  };

  Partition& partition(uint64_t hash) { return partitions_[hash >> (64 - kPartitionBits)]; }
  const Partition& partition(uint64_t hash) const { return partitions_[hash >> (64 - kPartitionBits)]; }

  const uint64_t capacity_;
  std::unique_ptr<Partition[]> partitions_;
};

}  // namespace calico::translation
