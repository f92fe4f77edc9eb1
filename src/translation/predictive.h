// PredictiveTranslation: PrediCache ([PrediCache], sections 3-5) as a policy of
// BasicBufferPool. Two parts:
//
//  1. PredictiveTable, one per space: a chained hash table block -> Entry (section 4).
//     Each bucket is 32 bytes: {version (optimistic bucket latch), inlined first slot:
//     key + Entry, pointer to the overflow chain}. The Entry is the page's 64-bit state word
//     (entry.h): PrediCache's frame header inlined in the slot (frame, version, latch
//     state). The rest of the frame header (owner, dirty, version seed) stays in the pool's
//     FrameMeta, as for every translation.
//  2. FramePredictor, one per pool: preferred_frame(pid) = hash(pid) mod frames + 1 with a
//     precomputed fast modulo (Lemire's fastmod: two multiplications, magic chosen when the
//     pool opens; section 3.1 uses Granlund-Montgomery for the same purpose). The pool
//     prefetches the predicted frame before the lookup resolves (Listing 3), loads faults
//     into the preferred frame when it is free, and promotes/demotes pages into it on later
//     hits (src/pool/features/promotion.h).
//
// Lookup (entry()): hash(block) picks the bucket; a matching inlined key returns its Entry
// at once (one cache line). Otherwise find_or_insert() reads the bucket optimistically:
// version v (even), walk the chain; a hit returns; a miss upgrades the optimistic read to
// the latch by CAS v -> v + 1, which succeeds only if no insert happened since v, so the
// miss still holds; it inserts (inlined slot if empty, else a new node at the chain head)
// and releases with v + 2. Readers never write.
//
// Pool invariant (BasicBufferPool's Table contract): entry(block) returns the SAME Entry for
// a page for the pool's whole life, because threads keep Entry pointers (guards, optimistic
// reads, the evictor) and validate by re-reading that word. So slots are created on first
// use and never removed, moved or reused: a slot's key goes 0 -> key once, which is also why
// a matching key needs no version validation. This DEVIATES from PrediCache, which removes
// a page's slot when it is evicted (section 5.1). Costs: the table holds every page of the
// space ever touched, not only the resident ones: 32 bytes per touched page beyond the
// first slot of its bucket (overflow nodes), and chains grow past the paper's fill factor
// when a space touches more pages than the pool has frames (load = touched pages / buckets).
// Resident pages: what the pool holds; translation: O(touched pages), not O(frames).
//
// Sizing rule: buckets = the power of two >= 2 x frames (the paper sizes its table at twice
// the pool: expected fill factor <= 0.5 while a space's touched pages fit in the pool),
// bounded by the space's capacity, at least kMinBuckets. Buckets and overflow nodes live in
// reserved, lazily backed memory (VirtualRegion): an untouched bucket page costs nothing.
//
// Dropping a space (reset()): every entry is already zero (the pool discarded the frames).
// The bucket array and node chunks are punched (memory returned, reads zero afterwards) but
// stay mapped, so a thread still walking a chain with a stale pointer reads zeros and ends
// its walk; its misses then get dead_, an all-zero entry that nobody writes (the pool writes
// entries of live spaces only), so its access fails in fault() with kUnknownSpace.
//
// Thread safety: every field is atomic. Inserts into one bucket are serialised by its
// version latch; node allocation by nodes_mutex_ (first touch of a page only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "calico/page_id.h"
#include "calico/options.h"
#include "memory/virtual_region.h"
#include "translation/entry.h"

namespace calico::translation {

// MurmurHash64A (MurmurHash2, 64-bit) of one 8-byte word with seed 0: the hash the paper uses
// for the table and the prediction.
constexpr uint64_t murmur2_64(uint64_t key) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  uint64_t h = 0 ^ (8 * m);
  uint64_t k = key * m;
  k ^= k >> r;
  k *= m;
  h ^= k;
  h *= m;
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

// a mod d for 32-bit a and a divisor fixed at construction (Lemire, Kaser, Kurz: "Faster
// Remainder by Direct Computation", 2019): exact for every 32-bit a and d >= 1.
class FastMod {
 public:
  explicit constexpr FastMod(uint32_t d) : d_(d), magic_(~uint64_t{0} / d + 1) {}
  constexpr uint32_t operator()(uint32_t a) const {
    uint64_t low = magic_ * a;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d_) >> 64);
  }
  constexpr uint32_t divisor() const { return d_; }

 private:
  uint64_t d_;
  uint64_t magic_;
};
static_assert(FastMod(7)(100) == 2 && FastMod(1)(12345) == 0 && FastMod(0xFFFFFFFFu)(0xFFFFFFFFu) == 0);
static_assert(FastMod(1000)(0xFFFFFFFFu) == 0xFFFFFFFFu % 1000);

class PredictiveTable {
 public:
  static constexpr uint64_t kMinBuckets = 16;
  static constexpr size_t kNodesPerChunk = 2048;  // 64 KB of overflow nodes per chunk

  // capacity: the space's maximum blocks; the bucket count follows the pool's frame count
  // (options.pool_bytes / options.page_size). Errors: kInvalidArgument (capacity 0 or
  // above 2^32, address space not reservable).
  PredictiveTable(uint64_t capacity, const PoolOptions& options);
  PredictiveTable(const PredictiveTable&) = delete;
  PredictiveTable& operator=(const PredictiveTable&) = delete;

  // The entry of `block` (< capacity), created zero (evicted) on first use; the same object
  // for the table's life. Lock-free for readers.
  Entry& entry(BlockId block) {
    const uint64_t key = uint64_t{block} + 1;
    Bucket& b = buckets_[bucket_of(block)];
    if (b.key.load(std::memory_order_acquire) == key) [[likely]] return b.entry;
    return find_or_insert(b, key);
  }
  uint64_t capacity() const { return capacity_; }
  uint64_t bucket_count() const { return mask_ + 1; }

  // No translation memory to reclaim around a resident entry (slots are never removed).
  void acquire_ref(BlockId) const {}
  bool release_ref(BlockId) const { return false; }

  // The space was dropped: see the header. Pre: every entry is zero.
  void reset();

  // Calls fn(block, entry) for every slot (check_invariants, tests; racy unless quiescent).
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (uint64_t i = 0; i <= mask_; ++i) {
      const Bucket& b = buckets_[i];
      if (uint64_t k = b.key.load(std::memory_order_acquire); k != 0) fn(static_cast<BlockId>(k - 1), b.entry);
      for (Node* n = b.next.load(std::memory_order_acquire); n != nullptr; n = n->next.load(std::memory_order_acquire)) {
        fn(static_cast<BlockId>(n->key.load(std::memory_order_acquire) - 1), n->entry);
      }
    }
  }

  // Tests and reports: slots in use, overflow nodes, the longest chain (slots, inlined one
  // included). Racy unless quiescent.
  struct Shape {
    uint64_t slots = 0;
    uint64_t overflow_nodes = 0;
    uint64_t longest_chain = 0;
  };
  Shape shape() const;

  // Measured memory (the `blocks` limit of arrays does not apply: the whole table).
  size_t private_bytes(uint64_t blocks) const;
  size_t mincore_bytes(uint64_t blocks) const;
  size_t reserved_bytes() const;

 private:
  struct Node {
    std::atomic<uint64_t> key;   // block + 1, set before the node is published
    Entry entry;
    std::atomic<Node*> next;
    uint64_t unused;
  };
  struct Bucket {
    std::atomic<uint64_t> version;  // even: free; odd: an inserter holds the bucket
    std::atomic<uint64_t> key;      // block + 1 of the inlined slot; 0 = empty
    Entry entry;                    // the inlined slot's state word
    std::atomic<Node*> next;        // overflow chain, newest first
  };
  static_assert(sizeof(Bucket) == 32 && sizeof(Node) == 32, "two buckets per cache line");

  uint64_t bucket_of(BlockId block) const { return murmur2_64(block) & mask_; }
  Entry& find_or_insert(Bucket& b, uint64_t key);
  static Entry* find(Bucket& b, uint64_t key);
  Entry* insert_locked(Bucket& b, uint64_t key);  // pre: b's latch held
  Node* allocate_node();

  uint64_t capacity_;
  uint64_t mask_;
  memory::VirtualRegion bucket_region_;
  Bucket* buckets_;
  std::atomic<bool> retired_{false};
  Entry dead_{0};  // misses of a retired table: zero, never written

  mutable std::mutex nodes_mutex_;  // guards chunks_, chunk_used_
  std::vector<memory::VirtualRegion> chunks_;
  size_t chunk_used_ = kNodesPerChunk;  // nodes handed out from chunks_.back()
};

struct PredictiveTranslation {
  static constexpr std::string_view kName = "predictive";
  using Table = PredictiveTable;
  static constexpr bool kFlatEntries = false;
  static constexpr bool kPagesInPlace = false;
  static constexpr bool kDirect = false;

  // Section 5.1: a hit outside the preferred frame promotes the page with probability
  // 1/kPromoteOneIn when that frame is free, 1/kDemoteOneIn when its page must be demoted.
  static constexpr uint32_t kPromoteOneIn = 32;
  static constexpr uint32_t kDemoteOneIn = 512;

  // Per pool (BasicBufferPool holds one; pool/features/prediction.h): the preferred frame of a page,
  // 1 .. num_frames.
  class FramePredictor {
   public:
    explicit FramePredictor(FrameId num_frames) : mod_(num_frames == 0 ? 1 : num_frames) {}
    FrameId preferred_frame(PageId pid) const {
      uint64_t h = murmur2_64(pid.raw);
      return mod_(static_cast<uint32_t>(h ^ (h >> 32))) + 1;
    }

   private:
    FastMod mod_;
  };
};

}  // namespace calico::translation
