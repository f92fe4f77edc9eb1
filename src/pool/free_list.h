// FreeList: frames that hold no page. A mutex-protected stack; taken once per fault and
// given back once per eviction, never on a hit, so its lock is off the hot path.
// Invariant: a frame is in the list at most once, and a listed frame is referenced by no
// entry (its owner is 0).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "calico/checks.h"
#include "calico/page_id.h"

namespace calico::pool {

class FreeList {
 public:
  // Starts with frames 1..num_frames, handed out in ascending order.
  explicit FreeList(FrameId num_frames) {
    frames_.reserve(num_frames);
    for (FrameId f = num_frames; f >= 1; --f) frames_.push_back(f);
    size_.store(num_frames, std::memory_order_relaxed);
  }

  // Returns a free frame or kInvalidFrame.
  FrameId pop() {
    if (size_.load(std::memory_order_relaxed) == 0) return kInvalidFrame;
    std::lock_guard lock(mutex_);
    if (frames_.empty()) return kInvalidFrame;
    FrameId f = frames_.back();
    frames_.pop_back();
    size_.store(frames_.size(), std::memory_order_relaxed);
    return f;
  }

  void push(FrameId f) {
    CALICO_DCHECK(f != kInvalidFrame);
    std::lock_guard lock(mutex_);
    frames_.push_back(f);
    size_.store(frames_.size(), std::memory_order_relaxed);
  }

  // Approximate unless the caller excludes concurrent push/pop.
  size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Test/checker access: a copy of the listed frames.
  std::vector<FrameId> snapshot() const {
    std::lock_guard lock(mutex_);
    return frames_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<FrameId> frames_;
  std::atomic<size_t> size_{0};
};

}  // namespace calico::pool
