// IoRing: page reads and writes through io_uring (liburing 2.3).
//
// Entry points: IoRing::IoRing(), submit_and_wait(), push(), submit(), reap() (reap_one()).
//
// Invariants (checked at each entry with CALICO_DCHECK):
//   in_flight_ == number of busy slots == depth_ - free_slots_.size() <= depth_
//   queued_    == unsubmitted_.size() <= in_flight_
//   in_flight_ - queued_ requests are held by the kernel; the SQ holds at most queued_
//   entries, so io_uring_get_sqe() cannot fail (the SQ has >= depth_ entries).
// Every completion goes through the fault injector exactly once, just before it is reported.
#include "io/io_ring.h"

#include <liburing.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::io {
namespace {

constexpr unsigned kMaxDepth = 4096;
// Resubmissions of one request after -EINTR/-EAGAIN before its error is reported.
constexpr unsigned kMaxRetries = 8;
// Consecutive io_uring_submit() calls that make no progress before the ring gives up.
constexpr unsigned kMaxSubmitAttempts = 64;
// After io_uring_wait_cqe fails with anything but EINTR, the completion is polled for (the
// kernel posts completions without our help) at most this many times, 1 ms apart: ~10 s.
constexpr unsigned kMaxWaitPolls = 10000;

[[maybe_unused]] std::string strerror_result(const char* s, const char*) { return s; }
[[maybe_unused]] std::string strerror_result(int, const char* buf) { return buf; }

std::string errno_text(int err) {
  char buf[128] = {};
  return strerror_result(strerror_r(err, buf, sizeof buf), buf);
}

bool retryable(int res) { return res == -EINTR || res == -EAGAIN; }

// Orders a destroyed ring's accesses before those of any ring created later. liburing maps
// the rings with raw system calls, so the kernel may hand a new ring the addresses of one
// just unmapped by another thread, and nothing the program does orders the two threads'
// accesses to that memory: ThreadSanitizer, which sees neither the munmap nor the mmap,
// then reports the reuse as a race (a thread that ended and a running one, each with its
// own thread_ring). The kernel does order them (the munmap returned before the mmap
// reused the range); this release (destructor) / acquire (constructor) pair says so in
// the program's own terms. One atomic operation per ring created or destroyed.
std::atomic<uint64_t> rings_unmapped{0};

bool peek_cqe(io_uring* ring, uint64_t* tag, int* res) {
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(ring, &cqe) != 0 || cqe == nullptr) return false;
  *tag = io_uring_cqe_get_data64(cqe);
  *res = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  return true;
}

}  // namespace

IoRing::IoRing(unsigned depth, FaultInjector* faults) : depth_(depth), faults_(faults) {
  if (depth == 0 || depth > kMaxDepth) {
    throw Error(ErrorCode::kInvalidArgument,
                "io_uring depth " + std::to_string(depth) + " is not in 1.." +
                    std::to_string(kMaxDepth));
  }
  slots_.resize(depth);
  free_slots_.reserve(depth);
  for (unsigned i = depth; i > 0; --i) free_slots_.push_back(i - 1);
  unsubmitted_.reserve(depth);

  ring_ = new io_uring{};
  const int rc = io_uring_queue_init(depth, ring_, 0);
  if (rc < 0) {
    delete ring_;
    ring_ = nullptr;
    throw Error(ErrorCode::kIoError, "io_uring unavailable: " + errno_text(-rc));
  }
  if (ring_->sq.ring_entries < depth) {
    const unsigned got = ring_->sq.ring_entries;
    io_uring_queue_exit(ring_);
    delete ring_;
    ring_ = nullptr;
    throw Error(ErrorCode::kIoError, "io_uring gave " + std::to_string(got) + " entries, not " +
                                         std::to_string(depth));
  }
  (void)rings_unmapped.load(std::memory_order_acquire);  // after every earlier ring's unmap
}

IoRing::~IoRing() {
  // The buffers belong to the caller and may be freed right after we return: the kernel
  // must be done with every request it took. Requests it never took (queued_) are dropped
  // with the ring; io_uring_queue_exit() does not submit.
  try {
    drain_kernel();
  } catch (const Error& e) {
    // The kernel may still hold buffers; nothing better can be done from a destructor.
    std::fprintf(stderr, "calico: %s\n", e.what());
  }
  io_uring_queue_exit(ring_);
  delete ring_;
  rings_unmapped.fetch_add(1, std::memory_order_release);
}

void IoRing::wait_cqe(uint64_t* tag, int* res) {
  if (failed_ != 0) {
    throw Error(ErrorCode::kIoError, "io_uring wait failed earlier: " + errno_text(-failed_));
  }
  io_uring_cqe* cqe = nullptr;
  int rc;
  // Unbounded on EINTR: each retry is a delivered signal.
  do {
    rc = stalled() ? -ETIME : io_uring_wait_cqe(ring_, &cqe);
    if (faults_ != nullptr) rc = faults_->on_wait(rc);
  } while (rc == -EINTR);
  if (rc != 0 || cqe == nullptr) {
    // EAGAIN, EBUSY, ETIME or worse. The requests in flight are still the kernel's and their
    // buffers must not be handed back before they complete: poll for the completion (the
    // kernel posts it without our wait; each sleep is a syscall, which runs task work).
    const unsigned max_polls = faults_ != nullptr ? faults_->wait_polls(kMaxWaitPolls) : kMaxWaitPolls;
    for (unsigned polls = 0; polls < max_polls; ++polls) {
      if (!stalled() && peek_cqe(ring_, tag, res)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Nothing completed for ~10 s: the ring is unusable. Every later call fails too.
    failed_ = rc != 0 ? rc : -EIO;
    throw Error(ErrorCode::kIoError, "io_uring_wait_cqe: " + errno_text(-failed_) +
                                         " (no completion for 10 s; the ring is abandoned)");
  }
  *tag = io_uring_cqe_get_data64(cqe);
  *res = cqe->res;
  io_uring_cqe_seen(ring_, cqe);
}


void IoRing::drain_kernel() {
  while (in_flight_ > queued_) {
    uint64_t tag;
    int res;
    wait_cqe(&tag, &res);
    CALICO_CHECK(tag < slots_.size() && slots_[tag].busy);
    slots_[tag].busy = false;
    free_slots_.push_back(static_cast<uint32_t>(tag));
    --in_flight_;
  }
}

void IoRing::prep(uint32_t slot) {
  CALICO_DCHECK(submit_error_ == 0);
  const IoRequest& r = slots_[slot].request;
  io_uring_sqe* sqe = io_uring_get_sqe(ring_);
  CALICO_CHECK(sqe != nullptr);  // the SQ holds at most queued_ < depth_ entries
  if (r.write) {
    io_uring_prep_write(sqe, r.fd, r.buf, slots_[slot].transfer_len, r.offset);
  } else {
    io_uring_prep_read(sqe, r.fd, r.buf, slots_[slot].transfer_len, r.offset);
  }
  io_uring_sqe_set_data64(sqe, slot);
  unsubmitted_.push_back(slot);
  ++queued_;
}

void IoRing::submit_prepared() {
  unsigned stalls = 0;
  while (queued_ > 0 && submit_error_ == 0) {
    const int rc = io_uring_submit(ring_);
    if (rc > 0) {
      // The kernel consumes SQEs in order: the first rc are now its own.
      const unsigned taken = static_cast<unsigned>(rc);
      CALICO_CHECK(taken <= queued_);
      unsubmitted_.erase(unsubmitted_.begin(), unsubmitted_.begin() + taken);
      queued_ -= taken;
      stalls = 0;
      continue;
    }
    const bool transient = rc == 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY;
    if (transient && ++stalls < kMaxSubmitAttempts) continue;
    submit_error_ = rc < 0 ? rc : -EAGAIN;
  }
  CALICO_DCHECK(queued_ == unsubmitted_.size());
}

bool IoRing::push(const IoRequest& request) {
  CALICO_DCHECK(in_flight_ + free_slots_.size() == depth_);
  CALICO_DCHECK(reinterpret_cast<uintptr_t>(request.buf) % 4096 == 0);
  if (in_flight_ >= depth_) return false;
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  CALICO_CHECK(!slots_[slot].busy);
  uint32_t transfer_len = request.len;
  if (faults_ != nullptr) {
    transfer_len = faults_->transfer_bytes(request.write, request.fd, request.offset, request.len);
  }
  slots_[slot] = Slot{request, transfer_len, 0, true};
  ++in_flight_;
  if (submit_error_ != 0) {
    // Never reaches the kernel; reap_one() reports it with submit_error_.
    unsubmitted_.push_back(slot);
    ++queued_;
  } else {
    prep(slot);
  }
  return true;
}

unsigned IoRing::submit() {
  const unsigned before = queued_;
  submit_prepared();
  return before - queued_;
}

bool IoRing::reap_one(bool wait, uint64_t* user_data, int* result) {
  CALICO_DCHECK(in_flight_ + free_slots_.size() == depth_);
  CALICO_DCHECK(queued_ == unsubmitted_.size() && queued_ <= in_flight_);
  for (;;) {
    uint64_t tag;
    int res;
    if (stalled() || !peek_cqe(ring_, &tag, &res)) {
      if (submit_error_ != 0 && queued_ > 0) {
        // The ring has failed: requests the kernel never took complete with its error.
        tag = unsubmitted_.front();
        unsubmitted_.erase(unsubmitted_.begin());
        --queued_;
        res = submit_error_;
      } else if (!wait || in_flight_ == 0) {
        return false;
      } else {
        // Waiting for requests the kernel has not seen would never return.
        if (queued_ > 0) submit_prepared();
        if (in_flight_ == queued_) continue;  // submit failed: report those requests
        wait_cqe(&tag, &res);
      }
    }
    CALICO_CHECK(tag < slots_.size() && slots_[tag].busy);
    Slot& slot = slots_[tag];
    if (retryable(res) && submit_error_ == 0 && slot.retries < kMaxRetries) {
      ++slot.retries;
      prep(static_cast<uint32_t>(tag));
      submit_prepared();
      continue;
    }
    const IoRequest& r = slot.request;
    if (faults_ != nullptr) res = faults_->on_complete(r.write, r.fd, r.offset, r.len, res);
    *user_data = r.user_data;
    *result = res;
    slot.busy = false;
    free_slots_.push_back(static_cast<uint32_t>(tag));
    --in_flight_;
    return true;
  }
}

void IoRing::submit_and_wait(std::span<IoRequest> requests) {
  if (failed_ != 0) {
    throw Error(ErrorCode::kIoError, "io_uring wait failed earlier: " + errno_text(-failed_));
  }
  CALICO_CHECK(in_flight_ == 0);
  // Keeps up to depth_ requests in flight, refilling as completions arrive; each request
  // rides in a slot whose user_data is its index in `requests`.
  size_t next = 0;
  size_t done = 0;
  while (done < requests.size()) {
    while (next < requests.size() && in_flight_ < depth_) {
      IoRequest r = requests[next];
      r.user_data = next;
      const bool pushed = push(r);
      CALICO_CHECK(pushed);
      ++next;
    }
    submit();
    reap(
        [&](uint64_t index, int result) {
          CALICO_DCHECK(index < requests.size());
          requests[index].result = result;
          ++done;
        },
        true);
  }
  CALICO_CHECK(in_flight_ == 0 && next == requests.size());
}

}  // namespace calico::io
