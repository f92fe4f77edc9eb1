// BasicSpace<Table>: one file of pages and its translation table (the last level: for
// Calico a TranslationArray; see BasicBufferPool for what a Table provides).
//
// Locking: grow_mutex serialises file extension. fault_latch is taken shared by every operation that may install a frame in the
// space (fault, allocate, prefetch submission) for the length of that operation, and
// exclusive by drop_space. `alive` only goes true -> false, under fault_latch exclusive.
// A Space object is never freed while its pool lives (type-stable: see space_directory.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "io/page_file.h"
#include "calico/options.h"

namespace calico::pool {

template <class Table>
struct BasicSpace {
  BasicSpace(SpaceId id_, std::string name_, uint64_t capacity, io::PageFile file_, uint64_t blocks,
             const PoolOptions& options)
      : id(id_),
        name(std::move(name_)),
        table(capacity, options),
        file(std::move(file_)),
        num_blocks(blocks),
        durable_blocks(blocks),
        file_blocks(file.size_blocks()) {}

  const SpaceId id;
  const std::string name;
  Table table;
  io::PageFile file;
  std::atomic<uint64_t> num_blocks;  // blocks allocated; only grows
  // Blocks made durable by the last flush that synced this space (what the catalog records;
  // pool/README.md rule 6). <= num_blocks. Guarded by the pool's spaces_mutex_.
  uint64_t durable_blocks;
  // Pages the file has room for (extended ahead in chunks under grow_mutex). Invariant:
  // num_blocks <= file_blocks, so every allocated block reads back (as zeros if unwritten).
  std::atomic<uint64_t> file_blocks;
  std::mutex grow_mutex;
  std::atomic<bool> alive{true};
  std::shared_mutex fault_latch;
  // Pages the evictor wrote (and dropped from memory) since the file's last successful
  // fdatasync; flush() subtracts what it saw once a sync succeeds, and reports the rest
  // when one fails (their durability is then unknown: pool/README.md rule 6).
  std::atomic<uint64_t> unsynced_evictions{0};
};

}  // namespace calico::pool
