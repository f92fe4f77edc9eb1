// PartitionedTable<Store>: the per-space Table of the lock-based hash translations
// (hash_chained.h, hash_open.h): kPartitions independent hash maps, each behind its own
// reader-writer latch (calico.txt section 6.2: "we partition the hash table and use
// dedicated lock per partition to reduce lock contention").
//
// Entry points: entry(block) (find-or-insert; the hot path), size(), reset(),
// private_bytes()/mincore_bytes()/reserved_bytes() (bytes allocated), for_each_entry().
//
// Store (one per partition) provides, all under the partition latch:
//   explicit Store(ByteCounter*)        allocates only through a CountingAllocator on it
//   Entry* find(BlockId, uint64_t hash) const   (shared latch; hash == mix64(block))
//   Entry& find_or_insert(BlockId)              (exclusive latch)
//   size_t size() const; void for_each(fn) const  fn(BlockId, Entry&)
//
// Partitioning: block -> mix64(block) (hash_support.h); the top kPartitionBits bits pick the
// partition, the maps use the low bits, so the two choices are independent.
//
// Latch: std::shared_mutex per partition, cache-line aligned. Lookups of resident pages (the
// hot path) take it shared, so threads reading pages of one partition do not serialise
// behind each other; only the first access to a page ever inserts, under the exclusive
// latch. A spin lock would save nothing on the uncontended path (pthread_rwlock_rdlock is
// one atomic add, as a spin lock's CAS) and would serialise the readers. The latch is held
// for the lookup only, never across I/O or a page latch, and no other lock is taken under
// it: it is a leaf of the pool's lock order (pool/README.md).
//
// Invariant (the pool's contract, include/calico/buffer_pool.h): entry(b) returns the same
// Entry object for b for the table's whole life. Entries are created on first use and never
// removed: an evicted page keeps its zero entry. Translation memory therefore grows with the
// pages ever touched in the space, not with the resident pages (a deviation from the paper's
// hash tables, which delete on eviction and are sized 2x the frames; calico.txt 6.5). Threads
// keep Entry pointers across the latch release (pins, optimistic reads that validate the
// word later), so an entry may never move or be freed while someone could hold it.
//
// reset() (drop_space): every entry is stored zero, but nodes and slabs are kept until the
// pool closes: a thread with a stale pointer to the space (pool/README.md, "Dropping a space
// while others use it") may still hold or look up one of its entries, and must read a zero
// entry rather than freed memory. The array translation returns the memory because its
// mapping survives a punch; a heap-allocated node does not survive a free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "calico/checks.h"
#include "calico/page_id.h"
#include "calico/pool_options.h"
#include "translation/counting_allocator.h"
#include "translation/entry.h"
#include "translation/hash_support.h"

namespace calico::translation {

template <class Store>
class PartitionedTable {
 public:
  static constexpr unsigned kPartitionBits = 6;
  static constexpr size_t kPartitions = size_t{1} << kPartitionBits;  // 64, as shards go

  // capacity: the space's block limit (entry() is never asked for a block at or past it).
  // Errors: kInvalidArgument (capacity not in 1 .. 2^32).
  PartitionedTable(uint64_t capacity, const PoolOptions&)
      : capacity_(check_table_capacity(capacity, "partitioned hash table")),
        partitions_(std::make_unique<Partition[]>(kPartitions)) {}

  // The entry of `block`, created zero (evicted) on first use; the same object for the
  // table's life. Takes the partition latch shared, and exclusive only to insert.
  Entry& entry(BlockId block) {
    CALICO_DCHECK(block < capacity_);
    const uint64_t hash = mix64(block);
    Partition& p = partitions_[hash >> (64 - kPartitionBits)];
    {
      std::shared_lock lock(p.latch);
      if (Entry* e = p.store.find(block, hash)) [[likely]] return *e;
    }
    std::unique_lock lock(p.latch);
    return p.store.find_or_insert(block);
  }

  uint64_t capacity() const { return capacity_; }

  // No reclamation around resident entries: entries are never removed (see above).
  void acquire_ref(BlockId) const {}
  bool release_ref(BlockId) const { return false; }

  // Every entry zero; the memory stays until the table dies (see above).
  // Pre: no thread writes an entry concurrently (drop_space holds the space dead).
  void reset() {
    for (size_t i = 0; i < kPartitions; ++i) {
      std::unique_lock lock(partitions_[i].latch);
      partitions_[i].store.for_each([](BlockId, Entry& e) {
        CALICO_DCHECK(e.load(std::memory_order_relaxed) == 0);  // drop evicted every page
        e.store(0, std::memory_order_release);
      });
    }
  }

  // Entries ever created (pages touched).
  size_t size() const {
    size_t n = 0;
    for (size_t i = 0; i < kPartitions; ++i) {
      std::shared_lock lock(partitions_[i].latch);
      n += partitions_[i].store.size();
    }
    return n;
  }

  // fn(BlockId, const Entry&) for every entry, partition by partition (each under its latch
  // shared): for checkers and tests.
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

  const uint64_t capacity_;
  std::unique_ptr<Partition[]> partitions_;
};

}  // namespace calico::translation
