// Test support for races opened deterministically (pool/test_points.h): PauseAt stops one
// chosen thread at a test point until resume(); expect_finishes fails the run when a thread
// that should finish does not (a deadlock must fail, not hang: the stuck threads cannot be
// joined, so the process ends there).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include "calico/page_id.h"
#include "pool/test_points.h"

namespace calico::testing {

template <class F>
void expect_finishes(std::future<F>& f, const char* what) {
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    std::fprintf(stderr, "DEADLOCK: %s did not finish within 30 s\n", what);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

// Waits until pred() holds, polling; a wait that lasts 30 s fails the run as a deadlock (as
// expect_finishes). For waits on a condition another thread makes true, instead of sleeps.
template <class Pred>
void wait_until(Pred&& pred, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "DEADLOCK: waited 30 s for %s\n", what);
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Pauses one chosen thread the first time it reaches `point`, until resume().
class PauseAt : public pool::TestPoints {
 public:
  explicit PauseAt(Point point) : point_(point) {}
  void pause_thread(std::thread::id id) { target_ = id; }
  void at(Point point, PageId pid) override {
    if (point != point_ || std::this_thread::get_id() != target_ || done_.exchange(true)) return;
    seen_ = pid;
    paused_ = true;
    wait_until([&] { return resumed_.load(); }, "resume() of a paused thread");
  }
  void wait_paused() const {
    wait_until([&] { return paused_.load(); }, "a thread to pause at its test point");
  }
  void resume() { resumed_ = true; }
  PageId seen() const { return seen_; }

 private:
  const Point point_;
  std::atomic<std::thread::id> target_{};
  std::atomic<bool> done_{false}, paused_{false}, resumed_{false};
  PageId seen_;
};

// Stretches the race windows of stress tests: a thread that reaches any test point yields
// now and then, and sleeps 20-200 us more rarely, so that other threads run inside windows
// that are a few instructions wide (a faulter between its lookup, its reference and its
// claim while entries are retired and recycled; a mover between a destination's lookup and
// its install).
class Jitter : public pool::TestPoints {
 public:
  void at(Point, PageId) override {
    thread_local std::minstd_rand rng(static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    const unsigned dice = rng() % 64;
    if (dice == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(20 + rng() % 180));
    } else if (dice < 8) {
      std::this_thread::yield();
    }
  }
};

}  // namespace calico::testing
