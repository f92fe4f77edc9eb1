// VirtualRegion: address space reserved with mmap(MAP_NORESERVE), backed lazily by the OS.
//
// Entry points: reserve(), punch(), reset(), resident_bytes().
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

}  // namespace calico::memory
