// VirtualRegion: see virtual_region.h.
#include "memory/virtual_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::memory {
namespace {

constexpr int kProt = PROT_READ | PROT_WRITE;
constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

VirtualRegion::VirtualRegion(VirtualRegion&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

VirtualRegion& VirtualRegion::operator=(VirtualRegion&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

VirtualRegion::~VirtualRegion() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

VirtualRegion VirtualRegion::reserve(size_t bytes) {
  if (bytes == 0) throw Error(ErrorCode::kInvalidArgument, "cannot reserve an empty region");
  VirtualRegion r;
  r.bytes_ = round_up(bytes, kOsPageBytes);
  void* p = mmap(nullptr, r.bytes_, kProt, kFlags, -1, 0);
  if (p == MAP_FAILED) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot reserve " + std::to_string(r.bytes_) + " bytes of address space: " +
                    std::strerror(errno));
  }
  r.base_ = static_cast<std::byte*>(p);
  // 4 KB granularity for punching; THP is in 'madvise' mode here, this makes it explicit.
  madvise(r.base_, r.bytes_, MADV_NOHUGEPAGE);
  return r;
}

void VirtualRegion::punch(size_t offset, size_t len) {
  CALICO_DCHECK(offset % kOsPageBytes == 0 && len % kOsPageBytes == 0);
  CALICO_DCHECK(offset + len <= bytes_);
  // MADV_DONTNEED on private anonymous memory cannot fail for a valid range.
  CALICO_CHECK(madvise(base_ + offset, len, MADV_DONTNEED) == 0);
}

void VirtualRegion::reset() {
  CALICO_CHECK(base_ != nullptr);
  // MADV_DONTNEED over the whole region, not a MAP_FIXED remap: concurrent readers keep a
  // valid mapping throughout (they see old bytes or zeros), and the kernel skips the
  // unpopulated parts of the range cheaply. Page-table pages stay (one 4 KB page per 2 MB of
  // region that was ever touched).
  CALICO_CHECK(madvise(base_, bytes_, MADV_DONTNEED) == 0);
}

size_t VirtualRegion::resident_bytes(size_t offset, size_t len) const {
  CALICO_DCHECK(offset % kOsPageBytes == 0);
  if (offset >= bytes_ || len == 0) return 0;
  len = std::min(round_up(len, kOsPageBytes), bytes_ - offset);
  constexpr size_t kChunkPages = 1 << 16;  // bounds the vector: 64 KB per mincore call
  std::vector<unsigned char> vec(kChunkPages);
  size_t resident = 0;
  for (size_t done = 0; done < len;) {
    size_t chunk = std::min(len - done, kChunkPages * kOsPageBytes);
    CALICO_CHECK(mincore(base_ + offset + done, chunk, vec.data()) == 0);
    for (size_t i = 0; i < chunk / kOsPageBytes; ++i) resident += (vec[i] & 1);
    done += chunk;
  }
  return resident * kOsPageBytes;
}

size_t VirtualRegion::private_bytes(size_t offset, size_t len) const {
  CALICO_DCHECK(offset % kOsPageBytes == 0);
  if (offset >= bytes_ || len == 0) return 0;
  len = std::min(round_up(len, kOsPageBytes), bytes_ - offset);
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return resident_bytes(offset, len);  // no pagemap: the mincore upper bound
  constexpr size_t kChunkPages = 1 << 14;  // 128 KB of pagemap entries per read
  std::vector<uint64_t> entries(kChunkPages);
  constexpr uint64_t kPresent = uint64_t{1} << 63;
  constexpr uint64_t kExclusive = uint64_t{1} << 56;
  size_t pages = 0;
  uint64_t first_vpage = reinterpret_cast<uintptr_t>(base_ + offset) / kOsPageBytes;
  for (size_t done = 0; done < len / kOsPageBytes;) {
    size_t n = std::min(len / kOsPageBytes - done, kChunkPages);
    ssize_t got = pread(fd, entries.data(), n * 8, (first_vpage + done) * 8);
    if (got != static_cast<ssize_t>(n * 8)) break;
    for (size_t i = 0; i < n; ++i) {
      pages += (entries[i] & (kPresent | kExclusive)) == (kPresent | kExclusive);
    }
    done += n;
  }
  close(fd);
  return pages * kOsPageBytes;
}

size_t smaps_bytes(const std::byte* base, size_t len, std::string_view field) {
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return 0;
  auto lo = reinterpret_cast<uintptr_t>(base);
  uintptr_t hi = lo + len;
  char line[512];
  bool inside = false;
  size_t total_kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t start, end;
    // Mapping headers are "start-end perms ..."; no field line parses as two hex numbers
    // joined by '-'.
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &start, &end) == 2) {
      inside = start < hi && end > lo;
      continue;
    }
    if (!inside) continue;
    std::string_view l(line);
    size_t kb;
    if (l.size() > field.size() && l.substr(0, field.size()) == field && l[field.size()] == ':' &&
        std::sscanf(line + field.size() + 1, " %zu kB", &kb) == 1) {
      total_kb += kb;
    }
  }
  std::fclose(f);
  return std::min(total_kb * 1024, len);
}

}  // namespace calico::memory
