// FrameMeta: per-frame metadata, kept apart from the frames so that frames stay page-aligned
// for O_DIRECT and a hit touches only the entry and the frame.
//
// Field rules:
//  - owner: the PageId held by the frame, or 0. Written by the loader before it publishes
//    the entry, and by the evictor (latch held) before it zeroes the entry. Read without a
//    latch by CLOCK as a hint; CLOCK confirms through the entry (frame id must match).
//  - dirty: set by a holder of the exclusive latch; cleared by the evictor (exclusive) or
//    flush (shared latch, which excludes writers) after a successful write.
//  - version_seed: the version the next page loaded into this frame starts with; written
//    by the evictor (entry.h, "Version ABA").
#pragma once

#include <atomic>
#include <cstdint>

namespace calico::pool {

struct FrameMeta {
  std::atomic<uint64_t> owner{0};
  std::atomic<uint32_t> version_seed{1};
  std::atomic<uint8_t> dirty{0};
};
static_assert(sizeof(FrameMeta) == 16);

}  // namespace calico::pool
