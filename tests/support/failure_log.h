// FailureLog: what the threads of a stress test found wrong, counted, with the first message
// kept for the report. Callable as fail("what"); safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace calico::testing {

class FailureLog {
 public:
  void operator()(const std::string& what) {
    count_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    if (first_.empty()) first_ = what;
  }
  uint64_t count() const { return count_.load(); }
  std::string first() const {
    std::lock_guard lock(mutex_);
    return first_;
  }

 private:
  std::atomic<uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string first_;
};

}  // namespace calico::testing
