// FrameArena: the memory that holds page contents, one contiguous 2 MB-aligned region.
//
// Entry points: FrameArena(), frame(), huge_page_bytes().
//
// Invariants:
//  - Frame f (1 <= f <= num_frames) lives at data() + f * page_size. Frame 0 is never a real
//    frame (kInvalidFrame); its slot is allocated and unused so that the address computation
//    on the hot path is one shift-add with no bias (page sizes are powers of two).
//  - The mapping is stable for the arena's lifetime: eviction never unmaps a frame, so a
//    frame address may be read (optimistically) at any time without faulting.
//  - With huge pages requested, the region is MADV_HUGEPAGE and 2 MB-aligned; I/O and
//    eviction still work on page_size frames inside the huge pages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "calico/page_id.h"

namespace calico::memory {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class FrameArena {
 public:
  // Maps (num_frames + 1) * page_size bytes rounded up to 2 MB. `prefault` touches every
  // byte so that huge pages (and physical memory) are taken now, not on first access.
  // Errors: kInvalidArgument (zero frames, bad page size, mmap failure).
  FrameArena(size_t page_size, uint32_t num_frames, bool huge_pages, bool prefault);
  FrameArena(const FrameArena&) = delete;
  FrameArena& operator=(const FrameArena&) = delete;
  ~FrameArena();

  std::byte* frame(FrameId f) const { return base_ + (static_cast<size_t>(f) << page_shift_); }
  FrameId num_frames() const { return num_frames_; }
  size_t page_size() const { return page_size_; }
  std::byte* data() const { return base_; }
  size_t bytes() const { return bytes_; }

  // AnonHugePages of the arena's mappings, read from /proc/self/smaps: how much of the
  // arena the kernel actually backs with 2 MB pages.
  size_t huge_page_bytes() const;

 private:
  std::byte* reserved_ = nullptr;  // base_ with its guard regions
  size_t reserved_bytes_ = 0;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  size_t page_size_ = 0;
  unsigned page_shift_ = 0;  // page_size_ == 1 << page_shift_
  FrameId num_frames_ = 0;
};

}  // namespace calico::memory
