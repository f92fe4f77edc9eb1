// SpaceDirectory: the upper translation level, space id -> Space*, and the per-thread path
// cache that keeps it off the hot path ([Calico] Algorithm 1, GetTranslationEntry).
//
// Entry points: lookup() (slow path), publish()/retire() (create/drop), epoch().
//
// The directory is itself an array indexed by SpaceId: 2^32 pointers reserved with
// MAP_NORESERVE (32 GB of address space, a few KB of memory for the ids in use), so a
// lookup is one load. Pointers are published with release and read with acquire.
// Invariants:
//  - A published T is never freed while the directory's owner lives (type-stable), so a
//    thread may keep using a pointer it read even after the space is retired; the owner
//    makes such late accesses see zero entries and fail cleanly (pool/README.md).
//  - epoch() grows on every retire(). A path cache entry is valid only while its epoch
//    equals epoch(), so no thread keeps resolving a dropped space id from its cache.
#pragma once

#include <atomic>
#include <cstdint>

#include "calico/page_id.h"
#include "memory/virtual_region.h"
#include "translation/entry.h"

namespace calico::translation {

template <class T>
class SpaceDirectory {
 public:
  SpaceDirectory()
      : region_(memory::VirtualRegion::reserve((uint64_t{1} << 32) * sizeof(std::atomic<T*>))),
        slots_(reinterpret_cast<std::atomic<T*>*>(region_.data())) {}

  T* lookup(SpaceId id) const { return slots_[id].load(std::memory_order_acquire); }
  void publish(SpaceId id, T* space) { slots_[id].store(space, std::memory_order_release); }
  void retire(SpaceId id) {
    slots_[id].store(nullptr, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
  }
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

 private:
  memory::VirtualRegion region_;
  std::atomic<T*>* slots_;
  std::atomic<uint64_t> epoch_{1};
};

// The per-thread path cache: the last space this thread resolved in one pool. Keyed by the
// pool's unique id (never reused, unlike its address) and the directory epoch.
struct PathCache {
  uint64_t pool_uid = 0;
  uint64_t epoch = 0;
  SpaceId space = kInvalidSpace;
  Entry* entries = nullptr;
  uint64_t capacity = 0;
  void* owner = nullptr;  // the pool's Space object
  // This thread's access counter in that pool. Bumped with a relaxed load and store (no
  // atomic read-modify-write): only this thread writes it; stats() reads it.
  std::atomic<uint64_t>* accesses = nullptr;
  // Frame prediction (read_fast): frame - block of this thread's last fast read in the space
  // (mod 2^32), and whether the read before it had the same difference. Pages allocated in
  // block order (a bulk load, a sequential scan that faulted them in) keep the difference
  // constant, so the next page's frame can be fetched while its entry loads.
  uint32_t frame_delta = 0;
  bool delta_stable = false;
};

inline thread_local PathCache tls_path_cache;

}  // namespace calico::translation
