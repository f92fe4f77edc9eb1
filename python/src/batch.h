// Batch helpers of the vector indexes: rows spread over C++ threads, and a free list of
// per-thread search states (an HNSW state holds one word per node of the capacity, so a
// search must reuse one rather than allocate it).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace calico::py {

// The threads a batch of n rows uses: `requested` (0: one per core), at most one per
// `grain` rows, at least one.
inline unsigned threads_for(uint64_t n, unsigned requested, uint64_t grain) {
  // Cached: hardware_concurrency() reads /sys on every call (microseconds).
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t want = requested == 0 ? hw : requested;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, n / std::max<uint64_t>(1, grain))));
}

// Calls body(worker, row) for every row < n on `threads` threads (the caller's thread is
// worker 0), rows handed out in chunks. The first exception stops the other workers (at
// their next chunk) and is rethrown after every worker has joined.
template <class Body>
void parallel_rows(uint64_t n, unsigned threads, Body&& body) {
  if (threads <= 1) {
    for (uint64_t i = 0; i < n; ++i) body(0u, i);
    return;
  }
  constexpr uint64_t kChunk = 8;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](unsigned w) {
    try {
      for (uint64_t b; !failed.load(std::memory_order_relaxed) && (b = next.fetch_add(kChunk)) < n;) {
        for (uint64_t i = b; i < std::min(n, b + kChunk); ++i) body(w, i);
      }
    } catch (...) {
      std::lock_guard l(error_mu);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// A free list of search states. acquire() returns one (made by `make` when none is free);
// the Lease gives it back when destroyed.
template <class State>
class StatePool {
 public:
  class Lease {
   public:
    Lease(StatePool& p, std::unique_ptr<State> s) : pool_(&p), state_(std::move(s)) {}
    Lease(Lease&&) noexcept = default;
    ~Lease() {
      if (state_) pool_->give_back(std::move(state_));
    }
    State& operator*() { return *state_; }

   private:
    StatePool* pool_;
    std::unique_ptr<State> state_;
  };

  template <class Make>
  Lease acquire(Make&& make) {
    {
      std::lock_guard l(mu_);
      if (!free_.empty()) {
        std::unique_ptr<State> s = std::move(free_.back());
        free_.pop_back();
        return Lease(*this, std::move(s));
      }
    }
    return Lease(*this, make());
  }

 private:
  void give_back(std::unique_ptr<State> s) {
    std::lock_guard l(mu_);
    free_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<State>> free_;
};

}  // namespace calico::py
