// Space: one file of pages and its last-level translation array.
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
#include "translation/translation_array.h"

namespace calico::pool {

struct Space {
  Space(SpaceId id_, std::string name_, uint64_t capacity, io::PageFile file_, uint64_t blocks)
      : id(id_),
        name(std::move(name_)),
        array(capacity),
        file(std::move(file_)),
        num_blocks(blocks),
        file_blocks(file.size_blocks()) {}

  const SpaceId id;
  const std::string name;
  translation::TranslationArray array;
  io::PageFile file;
  std::atomic<uint64_t> num_blocks;  // blocks allocated; only grows
  // Pages the file has room for (extended ahead in chunks under grow_mutex). Invariant:
  // num_blocks <= file_blocks, so every allocated block reads back (as zeros if unwritten).
  std::atomic<uint64_t> file_blocks;
  std::mutex grow_mutex;
  std::atomic<bool> alive{true};
  std::shared_mutex fault_latch;
};

}  // namespace calico::pool
