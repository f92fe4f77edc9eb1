// IoRing: a batch of page reads and writes through io_uring (liburing).
//
// Entry points: submit_and_wait() (synchronous batch), push()/submit()/reap() (asynchronous).
// Thread safety: none. An IoRing is used by one thread at a time; the pool keeps one per
// thread for synchronous batches and one per async lane, under the lane's mutex, for
// prefetch reads (pool/async_lane.h).
// Limits: at most depth() requests in flight; submit_and_wait() splits larger batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "io/fault_injector.h"

struct io_uring;

namespace calico::io {

struct IoRequest {
  int fd = -1;
  uint64_t offset = 0;       // bytes, page-aligned
  std::byte* buf = nullptr;  // 4096-aligned
  uint32_t len = 0;          // bytes
  bool write = false;
  uint64_t user_data = 0;    // returned by reap()
  int result = 0;            // filled on completion: bytes transferred or -errno
};

class IoRing {
 public:
  // Creates a ring with `depth` entries (1..4096, else kInvalidArgument); kIoError when the
  // kernel refuses io_uring (the message says so).
  explicit IoRing(unsigned depth, FaultInjector* faults = nullptr);
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;
  ~IoRing();

  // Submits every request and waits for all of them; sets each request's `result` (after
  // the fault injector, if any). Never throws for per-request failures: callers check
  // `result`. Throws kIoError only when the ring itself fails (wait_cqe). Pre: nothing in
  // flight from push().
  void submit_and_wait(std::span<IoRequest> requests);

  // Asynchronous use: push() queues one request (false when depth() are already queued or
  // in flight), submit() hands the queued ones to the kernel, reap() calls
  // fn(user_data, result) for completed requests: all that are ready, and when `wait`, at
  // least one (pre: in_flight() > 0). Returns the number reaped. A waiting reap() first
  // submits whatever is still queued. Each pushed user_data is reaped exactly once; a
  // request that -EINTR/-EAGAIN'd is resubmitted (bounded) before it is reported.
  bool push(const IoRequest& request);
  unsigned submit();
  template <class Fn>
  unsigned reap(Fn&& fn, bool wait);

  unsigned in_flight() const { return in_flight_; }
  // True once a wait found no completion (see wait_cqe): the ring must be replaced.
  bool failed() const { return failed_ != 0; }
  unsigned depth() const { return depth_; }

 private:
  bool stalled() const { return faults_ != nullptr && faults_->stalled(); }
  // One request between push() and reap(). A CQE carries only user_data, so the SQE's
  // user_data is the slot index and the slot keeps what the fault injector and a
  // resubmission need.
  struct Slot {
    IoRequest request;     // as pushed (result unused)
    uint32_t transfer_len = 0;  // bytes really transferred: request.len unless a fault says less
    unsigned retries = 0;  // resubmissions after -EINTR/-EAGAIN, at most kMaxRetries
    bool busy = false;
  };

  // Reaps one completion if ready (or waits for one when `wait`); returns false if none.
  bool reap_one(bool wait, uint64_t* user_data, int* result);
  // Fills the next SQE for slots_[slot] and appends it to unsubmitted_.
  void prep(uint32_t slot);
  // Hands every prepared SQE to the kernel. A hard failure (after bounded retries of
  // transient errors) sets submit_error_; the SQEs the kernel never took stay in
  // unsubmitted_ and are reaped with that error.
  void submit_prepared();
  // Waits for the kernel to finish everything it holds (in_flight_ == queued_ after).
  void drain_kernel();
  // Waits for the next completion and consumes it. EINTR is retried; any other failure of
  // io_uring_wait_cqe is followed by polling (bounded, ~10 s), since the requests and their
  // buffers stay the kernel's until they complete. kIoError when nothing completes: the
  // ring is then failed_ and every later wait throws at once.
  void wait_cqe(uint64_t* tag, int* res);

  io_uring* ring_ = nullptr;
  unsigned depth_ = 0;
  unsigned queued_ = 0;     // pushed, not yet submitted
  unsigned in_flight_ = 0;  // pushed and not yet reaped (includes queued_)
  FaultInjector* faults_ = nullptr;
  // 0, or the -errno of a hard submit failure. The ring then never submits again (SQEs the
  // kernel refused are still in the SQ): every later request completes with this error.
  int submit_error_ = 0;
  // 0, or the -errno of a wait that found no completion even by polling (wait_cqe).
  int failed_ = 0;
  std::vector<Slot> slots_;             // depth_ entries; busy == pushed and not reaped
  std::vector<uint32_t> free_slots_;    // stack of the !busy slot indices
  std::vector<uint32_t> unsubmitted_;   // slots of the queued_ requests, in SQ order
};

template <class Fn>
unsigned IoRing::reap(Fn&& fn, bool wait) {
  unsigned n = 0;
  uint64_t user_data;
  int result;
  while (in_flight_ > 0 && reap_one(wait && n == 0, &user_data, &result)) {
    fn(user_data, result);
    ++n;
  }
  return n;
}

}  // namespace calico::io
