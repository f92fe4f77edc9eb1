// Test support for races opened deterministically (pool/test_points.h): PauseAt stops one
// chosen thread at a test point until resume(); expect_finishes fails the run when a thread
// that should finish does not (a deadlock must fail, not hang: the stuck threads cannot be
// joined, so the process ends there).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
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

// Pauses one chosen thread the first time it reaches `point`, until resume().
class PauseAt : public pool::TestPoints {
 public:
  explicit PauseAt(Point point) : point_(point) {}
  void pause_thread(std::thread::id id) { target_ = id; }
  void at(Point point, PageId pid) override {
    if (point != point_ || std::this_thread::get_id() != target_ || done_.exchange(true)) return;
    seen_ = pid;
    paused_ = true;
    while (!resumed_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void wait_paused() const {
    while (!paused_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void resume() { resumed_ = true; }
  PageId seen() const { return seen_; }

 private:
  const Point point_;
  std::atomic<std::thread::id> target_{};
  std::atomic<bool> done_{false}, paused_{false}, resumed_{false};
  PageId seen_;
};

}  // namespace calico::testing
