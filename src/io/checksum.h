// On-disk page format and page checksums.
//
// Entry points: crc32c(), stamp_page() on write-back, verify_page() on read.
//
// Every page on disk is page_size bytes:
//   [0, page_size - 16)          payload (what the pool hands to callers)
//   [page_size - 16, +8)         page id (little-endian uint64), guards misdirected writes
//   [page_size - 8,  +4)         format magic kPageMagic
//   [page_size - 4,  +4)         CRC32C (Castagnoli) of bytes [0, page_size - 4)
// A block that is entirely zero (trailer included) was never written: verify_page says so
// (kZeroPage), and the pool refuses it like a corrupt page, since every block below a space's
// durable count was written (pool/README.md, rule 6). Anything else whose trailer does not
// match is corrupt.
#pragma once

#include <cstddef>
#include <cstdint>

#include "calico/page_id.h"

namespace calico::io {

inline constexpr size_t kTrailerBytes = 16;
inline constexpr uint32_t kPageMagic = 0x314C4143;  // "CAL1" little-endian

struct PageTrailer {
  uint64_t page_id;
  uint32_t magic;
  uint32_t crc32c;
};
static_assert(sizeof(PageTrailer) == kTrailerBytes);

// CRC32C of n bytes, continuing from `crc` (0 to start). Uses SSE4.2 when the CPU has it
// (checked once at runtime), a table otherwise; both give identical results.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// Writes the trailer (page id, magic, CRC32C) into the last kTrailerBytes of `page`.
// Pre: page_size >= 4096 and a power of two.
void stamp_page(std::byte* page, size_t page_size, PageId pid);

enum class PageCheck {
  kOk,        // trailer matches: magic, page id and checksum
  kZeroPage,  // the whole block is zero: never written
  kMismatch,  // corrupt (bad checksum, bad magic, or another page's id)
};

PageCheck verify_page(const std::byte* page, size_t page_size, PageId pid);

// The two CRC32C implementations behind crc32c(), exposed so tests can compare them.
namespace detail {
// Table-driven (slicing-by-8); works on every CPU.
uint32_t crc32c_software(const void* data, size_t n, uint32_t crc);
// SSE4.2 crc32 instruction. Pre: has_hardware_crc32c().
uint32_t crc32c_hardware(const void* data, size_t n, uint32_t crc);
bool has_hardware_crc32c();
}  // namespace detail

}  // namespace calico::io
