// Test support: a thread that flushes a pool every `period` until `stop`, for stress tests
// that check durability while workers run; a flush error goes to fail("flush: ...").
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "calico/error.h"

namespace calico::testing {

template <class Pool, class FailFn>
std::thread periodic_flusher(Pool& pool, const std::atomic<bool>& stop, std::chrono::milliseconds period, FailFn fail) {
  return std::thread([&pool, &stop, period, fail] {
    while (!stop.load()) {
      std::this_thread::sleep_for(period);
      try {
        pool.flush();
      } catch (const Error& e) {
        fail(std::string("flush: ") + e.what());
      }
    }
  });
}

}  // namespace calico::testing
