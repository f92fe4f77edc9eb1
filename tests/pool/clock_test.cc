// Tests for pool/clock.h: the CLOCK hand visits frames 1..n in order and wraps.
#include "pool/clock.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace calico::pool {
namespace {

TEST(ClockHand, VisitsOneToNInOrderAndWraps) {
  constexpr FrameId kN = 7;
  ClockHand hand(kN);
  EXPECT_EQ(hand.num_frames(), kN);
  for (int round = 0; round < 4; ++round) {
    for (FrameId f = 1; f <= kN; ++f) ASSERT_EQ(hand.advance(), f) << "round " << round;
  }
}

TEST(ClockHand, SingleFrame) {
  ClockHand hand(1);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(hand.advance(), 1u);
}

TEST(ClockHand, TwoFrames) {
  ClockHand hand(2);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(hand.advance(), FrameId(1 + i % 2)) << i;
}

TEST(ClockHand, NeverReturnsTheInvalidFrame) {
  constexpr FrameId kN = 1000;
  ClockHand hand(kN);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < 3 * kN; ++i) {
    FrameId f = hand.advance();
    ASSERT_NE(f, kInvalidFrame);
    ASSERT_LE(f, kN);
    sum += f;
  }
  EXPECT_EQ(sum, 3 * (uint64_t{kN} * (kN + 1) / 2)) << "each frame once per turn";
}

TEST(ClockHand, ZeroFramesIsAnInvariantViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(ClockHand hand(0), "invariant violated");
}

}  // namespace
}  // namespace calico::pool
