// ReadSections: the grace periods of BasicMapped's upserts (calico/index/mapped_index.h,
// "Upserts and searches"). A search runs inside a read section; an upsert that replaced a
// slot waits, before it removes the old slot, until every section that began before its
// commit has ended (wait_for_earlier). Sections that begin later do not delay it, so a
// writer never waits for more than the searches already running.
//
// Protocol (two counters per stripe, one per epoch parity; the scheme of SRCU):
//   enter:  (1) e = epoch; (2) active[e & 1] += 1 on the thread's stripe; (3) if epoch != e
//           now, undo (2) and start again; else the section is in parity e & 1.
//   leave:  active[parity] -= 1 on the stripe it entered.
//   wait_for_earlier (writers one at a time, a mutex): (1) e = epoch++; (2) wait until
//           active[e & 1] is 0 on every stripe.
// Why it is enough: every access is seq_cst, so they have one total order. A section whose
// step (3) read e before the writer's step (1) incremented the counter before that step,
// and the writer's step (2) sees it until it leaves. A section whose step (3) read e + 1
// began after the writer's step (1), which comes after the writer's commit: it sees the
// new binding. A section that read e at step (1) but e + 1 at step (3) starts again; the
// retry happens only when a writer flipped the epoch meanwhile, so enter() is bounded by
// the flips that run during it.
// The counters are padded to their own cache lines and striped by thread, so concurrent
// searches on different cores do not share a written line.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace calico::index {

class ReadSections {
 public:
  static constexpr unsigned kStripes = 16;  // more than the cores a search runs on here

  // A section: which counter to decrement at leave().
  struct Ticket {
    uint32_t stripe = 0;
    uint32_t parity = 0;
  };

  Ticket enter() noexcept {
    const uint32_t s = stripe_of_thread();
    for (;;) {
      const uint64_t e = epoch_.load(std::memory_order_seq_cst);
      std::atomic<uint64_t>& c = stripes_[s].active[e & 1];
      c.fetch_add(1, std::memory_order_seq_cst);
      if (epoch_.load(std::memory_order_seq_cst) == e) return Ticket{s, static_cast<uint32_t>(e & 1)};
      c.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  void leave(Ticket t) noexcept { stripes_[t.stripe].active[t.parity].fetch_sub(1, std::memory_order_seq_cst); }

  // Returns once every section that began before the call has left. Must not be called
  // from inside a section (it would wait for itself).
  void wait_for_earlier() {
    std::lock_guard l(writer_mu_);
    const uint64_t e = epoch_.fetch_add(1, std::memory_order_seq_cst);
    for (const Stripe& st : stripes_) {
      for (uint32_t spins = 0; st.active[e & 1].load(std::memory_order_seq_cst) != 0; ++spins) {
        // Sections are searches (tens of microseconds): spin briefly, then yield, then
        // sleep, so that a writer waiting for a long batch does not hold a core.
        if (spins < 64) continue;
        if (spins < 1024) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    }
  }

 private:
  struct alignas(64) Stripe {
    std::array<std::atomic<uint64_t>, 2> active{};
  };

  static uint32_t stripe_of_thread() noexcept {
    thread_local const uint32_t s =
        static_cast<uint32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % kStripes);
    return s;
  }

  alignas(64) std::atomic<uint64_t> epoch_{0};
  std::array<Stripe, kStripes> stripes_{};
  std::mutex writer_mu_;
};

}  // namespace calico::index
