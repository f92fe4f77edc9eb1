// VirtualRegion: address space reserved with mmap(MAP_NORESERVE), backed lazily by the OS.
//
// Entry points: reserve(), punch(), reset(), resident_bytes(), private_bytes();
// smaps_bytes() for any range of the process.
//
// Invariants:
//  - The region is private anonymous memory. Until a byte is written it reads as zero and is
//    served by the kernel's shared zero page (no physical memory).
//  - punch(range) and reset() return physical memory to the OS; the range then reads as zero.
//    The mapping itself never goes away while the VirtualRegion lives, so a thread holding a
//    stale pointer into it reads zeros, never faults (spaces rely on this; pool/README.md).
// Translation arrays use 4 KB OS pages (MADV_NOHUGEPAGE) so that punching is per 4 KB group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace calico::memory {

inline constexpr size_t kOsPageBytes = 4096;

class VirtualRegion {
 public:
  VirtualRegion() = default;
  VirtualRegion(const VirtualRegion&) = delete;
  VirtualRegion& operator=(const VirtualRegion&) = delete;
  VirtualRegion(VirtualRegion&& other) noexcept;
  VirtualRegion& operator=(VirtualRegion&& other) noexcept;
  ~VirtualRegion();

  // Reserves `bytes` (rounded up to 4 KB) of zero-filled address space.
  // Errors: kInvalidArgument when the address space cannot be reserved (errno in message).
  static VirtualRegion reserve(size_t bytes);

  std::byte* data() const { return base_; }
  size_t size() const { return bytes_; }

  // MADV_DONTNEED on [offset, offset + len): the pages read as zero afterwards and their
  // memory is returned. Pre: offset and len are 4 KB multiples inside the region.
  void punch(size_t offset, size_t len);

  // Punches the whole region: every byte reads zero and its memory is returned. Concurrent
  // readers see old bytes or zeros. Pre: the region is reserved (not moved-from).
  void reset();

  // Bytes of [offset, offset + len) that mincore reports resident. mincore also counts
  // pages that were only read and map the kernel's shared zero page, so this is an upper
  // bound of the memory used. Pre: offset 4 KB aligned.
  size_t resident_bytes(size_t offset, size_t len) const;

  // Bytes of [offset, offset + len) backed by private physical pages: present and
  // exclusively mapped in /proc/self/pagemap (bit 63 and bit 56). Unlike mincore this does
  // not count pages that only map the shared zero page, so it is the memory the region
  // really costs. Pre: offset 4 KB aligned.
  size_t private_bytes(size_t offset, size_t len) const;

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
};

// The sum of `field` (e.g. "AnonHugePages", "Rss") over the mappings of /proc/self/smaps
// that overlap [base, base + len), in bytes, capped at len. smaps reports whole mappings, so
// the figure is exact only for a range that is mappings of its own (guarded or with flags
// unlike its neighbours'). 0 when smaps cannot be read.
size_t smaps_bytes(const std::byte* base, size_t len, std::string_view field);

}  // namespace calico::memory
