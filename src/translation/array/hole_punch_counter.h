// Hole-punch counters: one 32-bit word per OS page of translation entries (512 entries of
// 8 bytes), counting the references that may write an entry in that page.
//
//   bit 31      kPunchLock: held while the page of entries is being punched
//   bits 0..30  count: resident entries + faults/prefetches in progress in this page
//
// Invariant (I1): every non-zero entry in the page is covered by one count. A thread takes
// its count (acquire) BEFORE it writes anything into an evicted entry (its loading latch
// included) and keeps it while the entry is resident; the evictor gives it back (release)
// only AFTER the entry is zero again.
// Consequence: count == 0 means every entry in the page is zero and no thread is about to
// write one, so MADV_DONTNEED (which zeroes the page) loses nothing.
//
// This closes the race the paper's Algorithm 2 leaves open: there a faulter latches the
// entry (a write into the page) before it increments the counter, so a concurrent punch of
// the same page can zero the latch under it, and two threads then load the same page. Here
// the latch write happens only after acquire() has succeeded, and acquire() waits while the
// page is being punched.
//
// Protocol:
//   acquire: wait while kPunchLock is set; CAS count -> count + 1.
//   release: CAS count -> count - 1; when the count is 1, CAS 1 -> kPunchLock instead,
//            punch the page, then store 0. kPunchLock is only ever set with count 0, and no
//            one holds a count then, so release never sees it set.
// The lock is held for one madvise of 4 KB; waiting acquirers spin, then yield.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "calico/checks.h"

namespace calico::translation {

using PunchCounter = std::atomic<uint32_t>;
inline constexpr uint32_t kPunchLock = 1u << 31;
inline constexpr uint32_t kPunchCountMask = kPunchLock - 1;

inline void cpu_relax() { __builtin_ia32_pause(); }

// Spin-then-yield backoff for short waits. With more threads than cores (the common case on
// small machines) a pure spin would burn the lock holder's time slice.
class Backoff {
 public:
  void pause() {
    if (++spins_ < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr int kSpinsBeforeYield = 64;
  int spins_ = 0;
};

inline void acquire_punch_ref(PunchCounter& c) {
  Backoff backoff;
  uint32_t v = c.load(std::memory_order_acquire);
  for (;;) {
    if (v & kPunchLock) {
      backoff.pause();
      v = c.load(std::memory_order_acquire);
      continue;
    }
    CALICO_DCHECK((v & kPunchCountMask) < kPunchCountMask);
    if (c.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return;
    }
  }
}

// Gives one reference back. When it was the last, calls punch() with the lock held and
// returns true. Pre: the caller holds a reference, and every entry it wrote is zero again.
template <class PunchFn>
bool release_punch_ref(PunchCounter& c, PunchFn&& punch) {
  uint32_t v = c.load(std::memory_order_acquire);
  for (;;) {
    CALICO_CHECK((v & kPunchLock) == 0 && (v & kPunchCountMask) > 0);
    if (v == 1) {
      if (c.compare_exchange_weak(v, kPunchLock, std::memory_order_acq_rel,
                                  std::memory_order_acquire)) {
        punch();
        c.store(0, std::memory_order_release);
        return true;
      }
    } else if (c.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return false;
    }
  }
}

// Punches the page again if nothing references it (count 0, no punch running); returns true
// if it did. For a thread whose CAS on an entry of the page failed after the page was punched
// under it: it had loaded the word resident, and meanwhile the page was evicted and punched.
// A failing CAS writes too (x86's LOCK CMPXCHG always writes its destination), so the kernel
// backed the page again, all zero, with nothing counted to punch it later.
template <class PunchFn>
bool repunch_punch_page(PunchCounter& c, PunchFn&& punch) {
  uint32_t v = 0;
  if (!c.compare_exchange_strong(v, kPunchLock, std::memory_order_acq_rel, std::memory_order_acquire)) return false;
  punch();
  c.store(0, std::memory_order_release);
  return true;
}

}  // namespace calico::translation
