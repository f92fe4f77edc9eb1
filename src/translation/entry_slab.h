// EntrySlab: entries at addresses that never change, for tables whose own slots move
// (hash_open.h: absl::flat_hash_map moves its values when it grows, so it maps a block to an
// Entry* into a slab instead of holding the entry).
//
// Entry points: allocate() (a new zero entry), size(), for_each().
//
// Layout: a list of chunks, each an array of entries that is never moved or freed while the
// slab lives; chunk sizes double from kFirstChunkEntries to kMaxChunkEntries (512 entries =
// one 4 KB page), so a partition that holds a handful of pages costs 128 bytes, not 4 KB.
// allocate() bumps an index in the last chunk. Memory is counted in the ByteCounter given at
// construction (counting_allocator.h), chunk list included.
//
// Thread safety: allocate() and for_each() need external exclusion (the partition's latch,
// exclusive for allocate). The returned entries are atomics, used by any thread at any time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "calico/checks.h"
#include "translation/counting_allocator.h"
#include "translation/entry.h"

namespace calico::translation {

class EntrySlab {
 public:
  static constexpr uint32_t kFirstChunkEntries = 16;
  static constexpr uint32_t kMaxChunkEntries = 512;

  explicit EntrySlab(ByteCounter* counter) : counter_(counter), chunks_(CountingAllocator<Chunk>(counter)) {}
  EntrySlab(const EntrySlab&) = delete;
  EntrySlab& operator=(const EntrySlab&) = delete;
  ~EntrySlab() {
    for (const Chunk& c : chunks_) {
      std::destroy_n(c.entries, c.size);
      CountingAllocator<Entry>(counter_).deallocate(c.entries, c.size);
    }
  }

  // A new entry, zero (evicted), at an address fixed for the slab's life. Pre: exclusion.
  Entry& allocate() {
    if (chunks_.empty() || used_ == chunks_.back().size) {
      uint32_t n = chunks_.empty() ? kFirstChunkEntries
                                   : std::min(kMaxChunkEntries, chunks_.back().size * 2);
      chunks_.reserve(chunks_.size() + 1);  // no throw after the chunk is allocated
      Entry* entries = CountingAllocator<Entry>(counter_).allocate(n);
      for (uint32_t i = 0; i < n; ++i) std::construct_at(entries + i, uint64_t{0});
      chunks_.push_back(Chunk{entries, n});
      used_ = 0;
    }
    Entry& e = chunks_.back().entries[used_++];
    CALICO_DCHECK(e.load(std::memory_order_relaxed) == 0);
    return e;
  }

  // Entries handed out so far.
  size_t size() const {
    size_t n = 0;
    for (size_t i = 0; i + 1 < chunks_.size(); ++i) n += chunks_[i].size;
    return chunks_.empty() ? 0 : n + used_;
  }

  // fn(Entry&) for every entry handed out. Pre: exclusion.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (size_t i = 0; i < chunks_.size(); ++i) {
      uint32_t n = i + 1 == chunks_.size() ? used_ : chunks_[i].size;
      for (uint32_t j = 0; j < n; ++j) fn(chunks_[i].entries[j]);
    }
  }

 private:
  struct Chunk {
    Entry* entries;
    uint32_t size;
  };
  ByteCounter* counter_;
  std::vector<Chunk, CountingAllocator<Chunk>> chunks_;
  uint32_t used_ = 0;  // entries handed out from chunks_.back()
};

}  // namespace calico::translation
