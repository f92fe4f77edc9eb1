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
// A faulter parked with its reference (kFaultRefTaken, kFaultClaimed) now and then stays for
// milliseconds: long enough for its entry to be retired and recycled by another group's move.
class Jitter : public pool::TestPoints {
 public:
  void at(Point point, PageId) override {
    thread_local std::minstd_rand rng(static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    const unsigned dice = rng() % 256;
    const bool faulter = point == Point::kFaultRefTaken || point == Point::kFaultClaimed;
    if (faulter && dice == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(1000 + rng() % 4000));
    } else if (dice < 4) {
      std::this_thread::sleep_for(std::chrono::microseconds(20 + rng() % 180));
    } else if (dice < 32) {
      std::this_thread::yield();
    }
  }
};

// Jitter, plus a rendezvous for the race of recycled side entries (pool/README.md S2): a
// faulter that took its reference parks now and then for up to 5 ms, and a mover about to
// install a destination entry wakes the parked faulters and gives them 200-500 us, so that a
// faulter whose stale entry that mover recycled claims it inside the mover's window.
class MoveRendezvous : public Jitter {
 public:
  void at(Point point, PageId pid) override {
    Jitter::at(point, pid);
    thread_local std::minstd_rand rng(static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())) + 1);
    if (point == Point::kFaultRefTaken && rng() % 32 == 0) {
      const uint64_t seen = wakeups_.load();
      parked_.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (wakeups_.load() == seen && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      parked_.fetch_sub(1);
    } else if (point == Point::kGroupMoveInstall && parked_.load() > 0) {
      wakeups_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 300));
    }
  }

 private:
  std::atomic<int> parked_{0};
  std::atomic<uint64_t> wakeups_{0};
};

}  // namespace calico::testing
