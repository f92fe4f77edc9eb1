// SparseArrayTranslation ("array_sparse"): Calico's array with the sparse-group fallback
// (docs/design/sparse_groups.md; docs/design/hot_path.md, "Sparse groups"). A group of 512 entries (one 4 KB page of
// the array) is dense, as in `array`, or sparse: its array page is punched and all zero,
// and its non-zero entries live in a side table of OwnedEntry keyed by block (the recycling
// table of hash_open: partitioned_table.h, entry.h R1-R5).
//
// Entry points: entries() (the array: the hot path's flat entries), entry(block) (where the
// block's entry lives now; inserts a side entry for a sparse group), find(block) (no
// insert), is_side(e), owns(e, block), forget_side(block), acquire_ref (returns the
// representation its reference covers), release_ref, the move steps (begin_move,
// side_insert, commit_move, abort_move) for the pool's movers (pool/features/sparse_groups.h),
// checkers' views, and memory (array + counters + the side table's allocated bytes).
//
// Rules (the pool's side is in pool/README.md, "Sparse groups"):
//  - The hot path is the array's: a non-zero array entry is that block's entry (an array
//    word is non-zero only while its group is dense, or latched by a mover). Only a zero one
//    leads to the slow path, which asks entry(block): the group's counter flags
//    (sparse_group_counter.h) say which representation holds the block.
//  - entry()/find() wait while a move runs (kMoving; movers never wait), so what they return
//    was the block's entry when the move flag was clear. It may move right after: holders of
//    an array word see it zero (readers fail validation, latchers fault, and the fault's
//    acquire_ref says "sparse"); holders of a side entry see it zero or kGone, or another
//    owner (R4/R5), and look the block up again.
//  - Every write out of zero is made under a reference of the entry's representation
//    (acquire_ref's answer), so the punched array page of a sparse group is never written
//    (I1); side entries are created zero by entry() and deleted by forget_side() (R2/R3).
//  - Thresholds (PoolOptions::sparse_groups: sparse_at, dense_at): a dense group whose count
//    falls to sparse_group_at after an eviction is moved to the side table; a sparse group
//    whose count has reached dense_group_at when a fault comes is moved back. A side entry
//    costs about 42-63 bytes with its map slot and free-list slot (hash_open.h), so 64
//    entries (the default dense_group_at) stay below the 4 KB page they replace; the
//    default sparse_group_at of 32 is half of it, so that a group does not flip on every
//    fault and eviction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calico/page_id.h"
#include "calico/options.h"
#include "translation/entry.h"
#include "translation/hash/hash_open.h"
#include "translation/hash/partitioned_table.h"
#include "translation/array/sparse_group_counter.h"
#include "translation/array/translation_array.h"

namespace calico::translation {

class SparseTranslationArray {
 public:
  static constexpr bool kSparseGroups = true;
  using SideTable = PartitionedTable<OpenStore, 3>;  // 3 bits: see side_

  SparseTranslationArray(uint64_t capacity, const PoolOptions& o)
      : array_(capacity), side_(capacity, o), sparse_at_(o.sparse_groups.sparse_at), dense_at_(o.sparse_groups.dense_at) {}

  Entry* entries() const { return array_.entries(); }
  uint64_t capacity() const { return array_.capacity(); }
  uint32_t sparse_group_at() const { return sparse_at_; }
  uint32_t dense_group_at() const { return dense_at_; }

  // Where block's entry lives now (array word, or side entry, created zero if none).
  Entry& entry(BlockId block) {
    if (quiet_word(block) & kGroupSparse) return side_.entry(block);
    return array_.entry(block);
  }
  // As entry(), but nullptr for a block of a sparse group without a side entry.
  Entry* find(BlockId block) const {
    if (quiet_word(block) & kGroupSparse) return side_.find(block);
    return &array_.entry(block);
  }
  bool is_side(const Entry& e) const {  // not inside the array (the difference wraps below it)
    return reinterpret_cast<uintptr_t>(&e) - reinterpret_cast<uintptr_t>(array_.entries()) >=
           array_.capacity() * sizeof(Entry);
  }
  // Whether e, reached through block's lookup, is block's entry now (exact under a latch on
  // e). An array word is always its block's: it is latched only from non-zero (a dense
  // group's entry) or after a reference for the dense representation (I1 above).
  bool owns(const Entry& e, BlockId block) const { return !is_side(e) || owned_by(e, block); }
  // Deletes block's side entry if it is zero (entry.h R2).
  void forget_side(BlockId block) { side_.forget(block); }

  // Hole-punch references (sparse_group_counter.h). acquire_ref returns true when the
  // reference covers the side table (the caller writes only a side entry), false for the
  // array. release_ref returns true when it punched the array page.
  bool acquire_ref(BlockId block) const { return acquire_group_ref(array_.counter(block)); }
  // After a CAS on block's array word failed and the word reads zero: the array page is
  // punched again if it is a sparse group's or an unreferenced dense one's
  // (sparse_group_counter.h, repunch_group_page). Returns true if it punched.
  bool repunch(BlockId block) {
    return repunch_group_page(array_.counter(block), [&] { array_.punch_group(block); });
  }
  bool release_ref(BlockId block) {
    return release_group_ref(array_.counter(block), [&] { array_.punch_group(block); }) == GroupRelease::kPunched;
  }

  // --- moves (the pool's movers, pool/features/sparse_groups.h) -------------------------------------
  // Sets the group's move flag if it is `sparse` (or dense) with a count in [min, max].
  bool begin_move(BlockId block, bool sparse, uint32_t min_count, uint32_t max_count, uint32_t* count) {
    return begin_group_move(array_.counter(block), sparse, min_count, max_count, count);
  }
  // Pre: the mover holds the move flag. The array page is punched before the group is
  // published sparse (its words are zero, and nobody writes them).
  void commit_move(BlockId block, bool to_sparse) {
    if (to_sparse) array_.punch_group(block);
    commit_group_move(array_.counter(block), to_sparse);
    (to_sparse ? moves_to_sparse_ : moves_to_dense_).fetch_add(1, std::memory_order_relaxed);
    sparse_groups_.fetch_add(to_sparse ? 1 : -1, std::memory_order_relaxed);
  }
  // Returns true when it punched (the move's count fell to zero meanwhile).
  bool abort_move(BlockId block) {
    refused_moves_.fetch_add(1, std::memory_order_relaxed);
    return abort_group_move(array_.counter(block), [&] { array_.punch_group(block); }) == GroupRelease::kPunched;
  }
  // The side entry of `block`, created zero if none (the mover stores the moved word).
  Entry& side_insert(BlockId block) { return side_.entry(block); }
  Entry* side_find(BlockId block) const { return side_.find(block); }

  // --- checkers and statistics ------------------------------------------------------------
  uint32_t group_word(BlockId block) const { return array_.counter(block).load(std::memory_order_acquire); }
  uint32_t group_count(BlockId block) const { return group_count_of(group_word(block)); }
  bool group_sparse(BlockId block) const { return group_word(block) & kGroupSparse; }
  const Entry& array_word(BlockId block) const { return array_.entry(block); }
  bool array_page_backed(BlockId block) const { return array_.page_backed(block); }
  size_t side_entries() const { return side_.size(); }
  int64_t sparse_groups() const { return sparse_groups_.load(std::memory_order_relaxed); }
  uint64_t moves_to_sparse() const { return moves_to_sparse_.load(std::memory_order_relaxed); }
  uint64_t moves_to_dense() const { return moves_to_dense_.load(std::memory_order_relaxed); }
  uint64_t refused_moves() const { return refused_moves_.load(std::memory_order_relaxed); }
  template <class Fn>
  void for_each_side_entry(Fn&& fn) const { side_.for_each_entry(fn); }

  // Pre: no references held, no thread writes concurrently (drop_space).
  void reset() {
    side_.reset();
    array_.reset();
    sparse_groups_.store(0, std::memory_order_relaxed);
  }
  // Array and counter pages (pagemap / mincore) plus every byte the side table allocated.
  size_t private_bytes(uint64_t limit_blocks) const { return array_.private_bytes(limit_blocks) + side_.allocated_bytes(); }
  size_t mincore_bytes(uint64_t limit_blocks) const { return array_.mincore_bytes(limit_blocks) + side_.allocated_bytes(); }
  size_t reserved_bytes() const { return array_.reserved_bytes() + side_.allocated_bytes(); }
  size_t side_bytes() const { return side_.allocated_bytes(); }

 private:
  // The group's counter word once no move runs (movers never wait: a short spin).
  uint32_t quiet_word(BlockId block) const {
    Backoff backoff;
    for (;;) {
      uint32_t v = array_.counter(block).load(std::memory_order_acquire);
      if ((v & kGroupMoving) == 0) return v;
      backoff.pause();
    }
  }


  mutable TranslationArray array_;
  // 8 partitions (1 KB of latches and maps per space): side lookups are the slow path of
  // cold pages only.
  mutable SideTable side_;
  const uint32_t sparse_at_;
  const uint32_t dense_at_;
  std::atomic<int64_t> sparse_groups_{0};  // groups with kSparse set now (empty ones included)
  std::atomic<uint64_t> moves_to_sparse_{0}, moves_to_dense_{0}, refused_moves_{0};
};

struct SparseArrayTranslation {
  static constexpr std::string_view kName = "array_sparse";
  using Table = SparseTranslationArray;
  static constexpr bool kFlatEntries = true;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;
};

}  // namespace calico::translation
