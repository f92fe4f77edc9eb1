// PredictiveTable: sizing, the optimistic find-or-insert, node chunks, reset and memory
// accounting (protocols in predictive.h).
#include "translation/predictive.h"

#include <algorithm>
#include <bit>
#include <string>
#include <thread>

#include "calico/checks.h"
#include "calico/error.h"
#include "translation/array/hole_punch_counter.h"  // cpu_relax

namespace calico::translation {

namespace {

uint64_t bucket_count_for(uint64_t capacity, const PoolOptions& options) {
  uint64_t frames = options.page_size == 0 ? 0 : options.pool_bytes / options.page_size;
  uint64_t want = std::bit_ceil(std::max<uint64_t>(2 * frames, PredictiveTable::kMinBuckets));
  uint64_t cap = std::bit_ceil(std::max<uint64_t>(capacity, PredictiveTable::kMinBuckets));
  return std::min(want, cap);
}

inline void relax(int* spins) {
  if (++*spins < 64) {
    cpu_relax();
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

PredictiveTable::PredictiveTable(uint64_t capacity, const PoolOptions& options) : capacity_(capacity) {
  if (capacity == 0 || capacity > (uint64_t{1} << 32)) {
    throw Error(ErrorCode::kInvalidArgument,
                "predictive table capacity " + std::to_string(capacity) + " is not in 1 .. 2^32 blocks");
  }
  uint64_t buckets = bucket_count_for(capacity, options);
  CALICO_CHECK(std::has_single_bit(buckets));
  mask_ = buckets - 1;
  bucket_region_ = memory::VirtualRegion::reserve(buckets * sizeof(Bucket));
  buckets_ = reinterpret_cast<Bucket*>(bucket_region_.data());
}

Entry* PredictiveTable::find(Bucket& b, uint64_t key) {
  if (b.key.load(std::memory_order_acquire) == key) return &b.entry;
  for (Node* n = b.next.load(std::memory_order_acquire); n != nullptr; n = n->next.load(std::memory_order_acquire)) {
    if (n->key.load(std::memory_order_acquire) == key) return &n->entry;
  }
  return nullptr;
}

Entry& PredictiveTable::find_or_insert(Bucket& b, uint64_t key) {
  for (int spins = 0;;) {
    uint64_t v = b.version.load(std::memory_order_acquire);
    if (v & 1) {  // an insert is in progress
      relax(&spins);
      continue;
    }
    // A found slot is final: keys are written once and slots never move.
    if (Entry* e = find(b, key)) return *e;
    // The miss holds as long as the version is still v: take the latch from exactly v.
    if (!b.version.compare_exchange_strong(v, v + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      continue;
    }
    Entry* e = retired_.load(std::memory_order_acquire) ? &dead_ : insert_locked(b, key);
    b.version.store(v + 2, std::memory_order_release);
    return *e;
  }
}

Entry* PredictiveTable::insert_locked(Bucket& b, uint64_t key) {
  CALICO_DCHECK((b.version.load(std::memory_order_relaxed) & 1) == 1);
  CALICO_DCHECK(key != 0 && key <= capacity_);
  if (b.key.load(std::memory_order_relaxed) == 0) {
    CALICO_DCHECK(b.entry.load(std::memory_order_relaxed) == 0);  // never used
    b.key.store(key, std::memory_order_release);
    return &b.entry;
  }
  Node* n = allocate_node();
  CALICO_DCHECK(n->key.load(std::memory_order_relaxed) == 0 && n->entry.load(std::memory_order_relaxed) == 0);
  n->key.store(key, std::memory_order_relaxed);
  n->next.store(b.next.load(std::memory_order_relaxed), std::memory_order_relaxed);
  b.next.store(n, std::memory_order_release);  // publishes the node's key and links
  return &n->entry;
}

PredictiveTable::Node* PredictiveTable::allocate_node() {
  std::lock_guard lock(nodes_mutex_);
  if (chunk_used_ == kNodesPerChunk) {
    chunks_.push_back(memory::VirtualRegion::reserve(kNodesPerChunk * sizeof(Node)));
    chunk_used_ = 0;
  }
  return reinterpret_cast<Node*>(chunks_.back().data()) + chunk_used_++;
}

void PredictiveTable::reset() {
  retired_.store(true, std::memory_order_seq_cst);
  bucket_region_.reset();
  std::lock_guard lock(nodes_mutex_);
  for (memory::VirtualRegion& c : chunks_) c.reset();
  // Nodes are not handed out again: a stale walker may still hold a pointer to any of them.
  chunk_used_ = kNodesPerChunk;
}

PredictiveTable::Shape PredictiveTable::shape() const {
  Shape s;
  for (uint64_t i = 0; i <= mask_; ++i) {
    const Bucket& b = buckets_[i];
    uint64_t chain = b.key.load(std::memory_order_acquire) != 0 ? 1 : 0;
    for (Node* n = b.next.load(std::memory_order_acquire); n != nullptr; n = n->next.load(std::memory_order_acquire)) {
      ++chain;
      ++s.overflow_nodes;
    }
    s.slots += chain;
    s.longest_chain = std::max(s.longest_chain, chain);
  }
  return s;
}

size_t PredictiveTable::private_bytes(uint64_t) const {
  size_t bytes = bucket_region_.private_bytes(0, bucket_region_.size());
  std::lock_guard lock(nodes_mutex_);
  for (const memory::VirtualRegion& c : chunks_) bytes += c.private_bytes(0, c.size());
  return bytes;
}

size_t PredictiveTable::mincore_bytes(uint64_t) const {
  size_t bytes = bucket_region_.resident_bytes(0, bucket_region_.size());
  std::lock_guard lock(nodes_mutex_);
  for (const memory::VirtualRegion& c : chunks_) bytes += c.resident_bytes(0, c.size());
  return bytes;
}

size_t PredictiveTable::reserved_bytes() const {
  std::lock_guard lock(nodes_mutex_);
  return bucket_region_.size() + chunks_.size() * kNodesPerChunk * sizeof(Node);
}

}  // namespace calico::translation
