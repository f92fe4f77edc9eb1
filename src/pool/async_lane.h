// AsyncLane: one io_uring ring for prefetch reads (group prefetch, Algorithm 4) and the
// reads it has in flight. The pool keeps kMaxAsyncLanes of them; each thread submits to its
// own lane (threads are dealt lanes round-robin, so more threads than lanes share), so that
// prefetching threads neither serialise on one ring nor wait behind each other's completions.
//
// Invariants (under `mutex`):
//   - every busy slot (not in free_slots) holds a read that was pushed and submitted to
//     `ring` and not yet reaped; its entry is io_pending_word(lane index), its frame is
//     owned by no page and is in no free list;
//   - the CAS of an entry to io_pending_word(i), the push and the submit all happen in one
//     critical section of lane i. So a thread that sees an entry pending in lane i and then
//     takes lane i's mutex finds the read in the ring (or already completed): waiting on
//     the ring always ends.
// Any thread may complete a lane's reads (a reader waiting for a page another thread
// prefetched), under the lane's mutex. io_uring allows it: the ring is set up without
// SINGLE_ISSUER or DEFER_TASKRUN, and only one thread at a time touches it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "calico/page_id.h"
#include "io/io_ring.h"
#include "translation/entry.h"

namespace calico::pool {

inline constexpr uint32_t kMaxAsyncLanes = 64;
static_assert(kMaxAsyncLanes - 1 <= translation::kVersionMask, "the lane is kept in a pending entry's version");

// Nanoseconds of a monotonic clock, for the time reads spend in flight.
inline uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

template <class Space>
struct AsyncLane {
  struct PendingRead {
    Space* space;
    PageId pid;
    FrameId frame;
    translation::Entry* entry;  // io_pending_word(lane), latched by the read: pid's until published
    uint64_t submitted_ns;      // when it was submitted (stats: read_inflight_ns)
  };

  std::mutex mutex;  // guards everything below
  // Created by the lane's first prefetch (nullptr until then, and after a failed creation).
  std::unique_ptr<io::IoRing> ring;
  std::vector<PendingRead> pending;  // by ring slot: depth entries
  std::vector<uint32_t> free_slots;  // stack of the slots with no read

  // Pre: mutex held. Creates the ring on first use; false when the kernel refuses one, or
  // when the ring failed (io_ring.h: its reads may still be the kernel's, so it is never
  // replaced). Prefetch is a hint: the caller then reads nothing ahead.
  bool ready(unsigned depth, io::FaultInjector* faults) {
    if (ring != nullptr) return !ring->failed();
    try {
      ring = std::make_unique<io::IoRing>(depth, faults);
    } catch (const std::exception&) {
      ring.reset();
      return false;
    }
    pending.assign(depth, PendingRead{});
    free_slots.clear();
    for (uint32_t s = depth; s > 0; --s) free_slots.push_back(s - 1);
    return true;
  }
  bool idle() const { return ring == nullptr || ring->in_flight() == 0; }
};

}  // namespace calico::pool
