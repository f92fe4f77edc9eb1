// EntrySlab: recyclable entries (entry.h, OwnedEntry) at addresses that never change, for
// tables whose own slots move (hash_open.h: absl::flat_hash_map moves its values when it
// grows, so it maps a block to an OwnedEntry* into a slab instead of holding the entry).
//
// Entry points: take() (an entry to give to a block), give_back() (a retired entry),
// size() (entries ever created), free_size() (entries waiting to be recycled), for_each().
//
// Type stability: chunks are never moved or freed while the slab lives, and an entry given
// back is only ever handed out again by take(), never destroyed. Threads keep Entry pointers
// without any latch of the table (entry.h, "Recycled entries"), so the memory of an entry
// must stay a valid OwnedEntry for the slab's life, whoever owns it.
//
// Layout: a list of chunks, each an array of 16-byte OwnedEntry; chunk sizes double from
// kFirstChunkEntries to kMaxChunkEntries (512 entries = 8 KB), so a partition that holds a
// handful of pages costs 256 bytes, not 8 KB. An entry never straddles a cache line (16-byte
// entries in 16-byte aligned chunks), so its word and owner are read from one line. take()
// pops the free list, else bumps an index in the last chunk. The free list has room for every
// entry ever created (reserved when a chunk is added), so give_back() never allocates and
// never throws. Memory is counted in the ByteCounter given at construction
// (counting_allocator.h), chunk list and free list included.
//
// Thread safety: every member needs external exclusion (the partition's latch, exclusive for
// take and give_back). The entries themselves are atomics, used by any thread at any time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "calico/checks.h"
#include "translation/hash/counting_allocator.h"
#include "translation/entry.h"

namespace calico::translation {

class EntrySlab {
 public:
  static constexpr uint32_t kFirstChunkEntries = 16;
  static constexpr uint32_t kMaxChunkEntries = 512;

  explicit EntrySlab(ByteCounter* counter)
      : counter_(counter), chunks_(CountingAllocator<Chunk>(counter)), free_(CountingAllocator<OwnedEntry*>(counter)) {}
  EntrySlab(const EntrySlab&) = delete;
  EntrySlab& operator=(const EntrySlab&) = delete;
  ~EntrySlab() {
    for (const Chunk& c : chunks_) {
      std::destroy_n(c.entries, c.size);
      CountingAllocator<OwnedEntry>(counter_).deallocate(c.entries, c.size);
    }
  }

  // An entry for a block: a retired one (word kGone, owner stale) if any, else a new one
  // (word 0, owner 0). The caller sets owner then word (entry.h, R3). Pre: exclusion.
  OwnedEntry& take() {
    if (!free_.empty()) {
      OwnedEntry* e = free_.back();
      free_.pop_back();
      CALICO_DCHECK(e->word.load(std::memory_order_relaxed) == kGoneWord.raw);
      return *e;
    }
    if (chunks_.empty() || used_ == chunks_.back().size) {
      uint32_t n = chunks_.empty() ? kFirstChunkEntries : std::min(kMaxChunkEntries, chunks_.back().size * 2);
      chunks_.reserve(chunks_.size() + 1);  // no throw after the chunk is allocated
      free_.reserve(created_ + n);          // give_back never allocates
      OwnedEntry* entries = CountingAllocator<OwnedEntry>(counter_).allocate(n);
      for (uint32_t i = 0; i < n; ++i) std::construct_at(entries + i);
      chunks_.push_back(Chunk{entries, n});
      created_ += n;
      used_ = 0;
    }
    OwnedEntry& e = chunks_.back().entries[used_++];
    CALICO_DCHECK(e.word.load(std::memory_order_relaxed) == 0 && e.owner.load(std::memory_order_relaxed) == 0);
    return e;
  }

  // Parks a retired entry for take(). Pre: exclusion; e came from take() and its word is
  // kGone (entry.h, R2). Never throws.
  void give_back(OwnedEntry& e) noexcept {
    CALICO_DCHECK(e.word.load(std::memory_order_relaxed) == kGoneWord.raw);
    CALICO_DCHECK(free_.size() < free_.capacity());
    free_.push_back(&e);
  }

  // Entries created so far (handed out or free).
  size_t size() const { return created_ - (chunks_.empty() ? 0 : chunks_.back().size - used_); }
  // Entries waiting in the free list.
  size_t free_size() const { return free_.size(); }

  // fn(OwnedEntry&) for every entry created, in or out of the free list. Pre: exclusion.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (size_t i = 0; i < chunks_.size(); ++i) {
      uint32_t n = i + 1 == chunks_.size() ? used_ : chunks_[i].size;
      for (uint32_t j = 0; j < n; ++j) fn(chunks_[i].entries[j]);
    }
  }

 private:
  struct Chunk {
    OwnedEntry* entries;
    uint32_t size;
  };
  ByteCounter* counter_;
  std::vector<Chunk, CountingAllocator<Chunk>> chunks_;
  std::vector<OwnedEntry*, CountingAllocator<OwnedEntry*>> free_;  // capacity >= created_
  size_t created_ = 0;  // entries in all chunks (handed out, free, or not yet used)
  uint32_t used_ = 0;   // entries handed out from chunks_.back()
};

}  // namespace calico::translation
