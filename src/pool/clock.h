// ClockHand: the position of CLOCK's hand over frames 1..num_frames, or over one tier's
// frames first..last (pool/features/tiering.h).
// Thread safety: none; the pool calls it only while holding its eviction mutex.
#pragma once

#include "calico/checks.h"
#include "calico/page_id.h"

namespace calico::pool {

class ClockHand {
 public:
  explicit ClockHand(FrameId num_frames) : ClockHand(1, num_frames) {}
  ClockHand(FrameId first, FrameId last) : first_(first), last_(last), next_(first) {
    CALICO_CHECK(first != kInvalidFrame && last >= first);
  }

  // The frame under the hand; the hand then moves on (wrapping after the last frame).
  FrameId advance() {
    FrameId f = next_;
    next_ = next_ == last_ ? first_ : next_ + 1;
    return f;
  }

  FrameId num_frames() const { return last_ - first_ + 1; }

 private:
  FrameId first_;
  FrameId last_;
  FrameId next_;
};

}  // namespace calico::pool
