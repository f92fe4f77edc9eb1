// FrameArena: see frame_arena.h.
#include "memory/frame_arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <string>

#include "calico/checks.h"
#include "calico/error.h"
#include "memory/virtual_region.h"

namespace calico::memory {

FrameArena::FrameArena(size_t page_size, uint32_t num_frames, bool huge_pages, bool prefault)
    : page_size_(page_size), num_frames_(num_frames) {
  if (num_frames == 0) throw Error(ErrorCode::kInvalidArgument, "a pool needs at least one frame");
  if (page_size != 4096 && page_size != 8192 && page_size != 16384) {
    throw Error(ErrorCode::kInvalidArgument,
                "page size " + std::to_string(page_size) + " is not 4096, 8192 or 16384");
  }
  page_shift_ = static_cast<unsigned>(__builtin_ctzll(page_size));
  size_t want = (static_cast<size_t>(num_frames) + 1) * page_size;
  bytes_ = (want + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // Over-reserve, align base_ to 2 MB, and keep the slack on both sides as PROT_NONE guards
  // (at least 4 KB each): the kernel then cannot merge the arena's mapping with a neighbour
  // of the same flags, so smaps reports the arena alone (huge_page_bytes()).
  reserved_bytes_ = bytes_ + 2 * kHugePageBytes;
  void* p = mmap(nullptr, reserved_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot map a frame arena of " + std::to_string(bytes_) + " bytes: " + std::strerror(errno));
  }
  reserved_ = static_cast<std::byte*>(p);
  auto raw = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (raw + 4096 + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  base_ = reinterpret_cast<std::byte*>(aligned);
  if (mprotect(base_, bytes_, PROT_READ | PROT_WRITE) != 0) {
    munmap(reserved_, reserved_bytes_);
    throw Error(ErrorCode::kInvalidArgument, std::string("cannot map a frame arena: ") + std::strerror(errno));
  }
  madvise(base_, bytes_, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  if (prefault) {
    for (size_t off = 0; off < bytes_; off += 4096) base_[off] = std::byte{0};
  }
  CALICO_CHECK(reinterpret_cast<uintptr_t>(base_) % kHugePageBytes == 0);
}

FrameArena::~FrameArena() {
  if (reserved_ != nullptr) munmap(reserved_, reserved_bytes_);
}

size_t FrameArena::huge_page_bytes() const { return smaps_bytes(base_, bytes_, "AnonHugePages"); }

}  // namespace calico::memory
