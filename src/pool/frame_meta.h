// FrameMeta: per-frame metadata, kept apart from the frames so that frames stay page-aligned
// for O_DIRECT and a hit touches only the entry and the frame.
//
// Field rules:
//  - owner: the PageId held by the frame, or 0. Written by the loader before it publishes
//    the entry, and by the evictor (latch held) before it zeroes the entry. Read without a
//    latch by CLOCK as a hint; CLOCK confirms through the entry (frame id must match).
//  - dirty: kClean, kDirty or kWrittenUnsynced. kDirty is set by a holder of the exclusive
//    latch (mark_dirty). flush sets kWrittenUnsynced under the shared latch (which excludes
//    writers) when it writes the page, and after its space's fdatasync CASes it to kClean
//    (synced) or back to kDirty (sync or write failed); a writer's mark_dirty meanwhile wins
//    (the CAS fails). The evictor never takes a kWrittenUnsynced page, and clears kDirty
//    (exclusive latch) after a successful write. Only one flush runs at a time, and it
//    leaves no kWrittenUnsynced page behind when it returns or throws.
//  - version_seed: the version the next page loaded into this frame starts with; written
//    by the evictor (entry.h, "Version ABA").
#pragma once

#include <atomic>
#include <cstdint>

namespace calico::pool {

inline constexpr uint8_t kClean = 0;
inline constexpr uint8_t kDirty = 1;
inline constexpr uint8_t kWrittenUnsynced = 2;

struct FrameMeta {
  std::atomic<uint64_t> owner{0};
  std::atomic<uint32_t> version_seed{1};
  std::atomic<uint8_t> dirty{0};
};
static_assert(sizeof(FrameMeta) == 16);

}  // namespace calico::pool
