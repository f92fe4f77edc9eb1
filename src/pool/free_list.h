// FreeList: frames that hold no page. A mutex-protected stack; taken once per fault and
// given back once per eviction, never on a hit, so its lock is off the hot path.
// take(f) removes a given frame (translations with a preferred frame: direct, predictive):
// the stack may then hold stale copies of f, which pop() skips (listed_[f] says whether f
// is free).
// Invariant: a frame is free at most once (listed_ is the truth; the stack holds every free
// frame, possibly with stale extras), and a free frame is referenced by no entry (its owner
// is 0).
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
  explicit FreeList(FrameId num_frames) : FreeList(1, num_frames) {}
  // Frames first..last only (one tier's, pool/features/tiering.h; empty when last < first);
  // push() takes no frame above last.
  FreeList(FrameId first, FrameId last) : listed_(size_t{last} + 1, 0) {
    CALICO_CHECK(first != kInvalidFrame && size_t{last} + 1 >= first);
    frames_.reserve(last - first + 1);
    for (FrameId f = last; f >= first; --f) {
      frames_.push_back(f);
      listed_[f] = 1;
    }
    size_.store(last - first + 1, std::memory_order_relaxed);
  }

  // Returns a free frame or kInvalidFrame.
  FrameId pop() {
    if (size_.load(std::memory_order_relaxed) == 0) return kInvalidFrame;
    std::lock_guard lock(mutex_);
    while (!frames_.empty()) {
      FrameId f = frames_.back();
      frames_.pop_back();
      if (listed_[f]) {
        listed_[f] = 0;
        size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        return f;
      }
    }
    return kInvalidFrame;
  }

  // Takes frame f if it is free.
  bool take(FrameId f) {
    std::lock_guard lock(mutex_);
    if (f >= listed_.size() || !listed_[f]) return false;
    listed_[f] = 0;
    size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    if (frames_.size() > 2 * listed_.size()) compact();
    return true;
  }

  void push(FrameId f) {
    CALICO_DCHECK(f != kInvalidFrame);
    std::lock_guard lock(mutex_);
    CALICO_CHECK(f < listed_.size() && !listed_[f]);  // a frame of another list, or freed twice
    listed_[f] = 1;
    frames_.push_back(f);
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Approximate unless the caller excludes concurrent push/pop.
  size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Test/checker access: a copy of the listed frames.
  std::vector<FrameId> snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<FrameId> out;
    for (FrameId f = 1; f < listed_.size(); ++f) {
      if (listed_[f]) out.push_back(f);
    }
    return out;
  }

 private:
  // Drops stale copies, keeping the stack order of the first copy of each free frame.
  void compact() {
    std::vector<uint8_t> seen(listed_.size(), 0);
    std::vector<FrameId> kept;
    for (FrameId f : frames_) {
      if (listed_[f] && !seen[f]) seen[f] = 1, kept.push_back(f);
    }
    frames_.swap(kept);
  }

  mutable std::mutex mutex_;
  std::vector<FrameId> frames_;
  std::vector<uint8_t> listed_;  // listed_[f] = 1 iff f is free (guarded by mutex_)
  std::atomic<size_t> size_{0};
};

}  // namespace calico::pool
