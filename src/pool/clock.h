// ClockHand: the position of CLOCK's hand over frames 1..num_frames.
// Thread safety: none; the pool calls it only while holding its eviction mutex.
#pragma once

#include "calico/checks.h"
#include "calico/page_id.h"

namespace calico::pool {

class ClockHand {
 public:
  explicit ClockHand(FrameId num_frames) : num_frames_(num_frames) { CALICO_CHECK(num_frames > 0); }

  // The frame under the hand; the hand then moves on (wrapping after num_frames).
  FrameId advance() {
    FrameId f = next_;
    next_ = next_ == num_frames_ ? 1 : next_ + 1;
    return f;
  }

  FrameId num_frames() const { return num_frames_; }

 private:
  FrameId num_frames_;
  FrameId next_ = 1;
};

}  // namespace calico::pool
