// The pool's side of predictive translation (translation/predictive.h, PrediCache): which
// policies predict, and the per-pool state BasicBufferPool keeps for them. Everything here
// is an empty type or compiled out for the other policies.
//
// Entry points:
//   PredictorOf<T>      T::FramePredictor, or NoPredictor (empty, [[no_unique_address]])
//   MoveCounters        promotions and demotions done by this pool (tests, reports)
//   promotion_draw(n)   true with probability 1/n (n a power of two): the thread's PRNG
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include "calico/page_id.h"
#include "calico/translation_policy.h"
#include "pool/thread_random.h"

namespace calico::pool {

struct NoPredictor {
  explicit NoPredictor(FrameId) {}
};

template <class T>
struct PredictorOf {
  using type = NoPredictor;
};
template <translation::Predicting T>
struct PredictorOf<T> {
  using type = typename T::FramePredictor;
};

// Counted by the movers (pool/features/promotion.h); relaxed, approximate while moves run.
struct MoveCounters {
  std::atomic<uint64_t> promotions{0};  // pages copied into their preferred frame
  std::atomic<uint64_t> demotions{0};   // pages copied out of a frame to make room
};
struct NoMoveCounters {};

template <class T>
using MoveCountersOf = std::conditional_t<translation::Predicting<T>, MoveCounters, NoMoveCounters>;

// True with probability 1 / one_in (a power of two), from thread_random(): cheap and good
// enough to decide a 1/32 or 1/512 chance.
inline bool promotion_draw(uint32_t one_in) {
  return (thread_random() & (uint64_t{one_in} - 1)) == 0;
}

}  // namespace calico::pool
