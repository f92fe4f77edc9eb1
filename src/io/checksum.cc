// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and the page trailer format.
//
// Entry points: crc32c(), stamp_page(), verify_page(); detail::crc32c_software() and
// detail::crc32c_hardware() for tests.
//
// crc32c() dispatches through a function pointer chosen once, on first use, from
// __builtin_cpu_supports("sse4.2"); that pointer is the only mutable global of the io layer
// and is written exactly once (function-local static, thread-safe initialisation).
#include "io/checksum.h"

#include <array>
#include <bit>
#include <cstring>

#include "calico/checks.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define CALICO_HAVE_SSE42_PATH 1
#else
#define CALICO_HAVE_SSE42_PATH 0
#endif

namespace calico::io {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // CRC32C, reflected
static_assert(kPageMagic != 0, "verify_page relies on a stamped page never being all zero");
static_assert(offsetof(PageTrailer, page_id) == 0 && offsetof(PageTrailer, magic) == 8 &&
              offsetof(PageTrailer, crc32c) == 12,
              "trailer layout is the on-disk format");

// kTables[0] is the classic byte table; kTables[k][b] is the CRC of byte b followed by k
// zero bytes, which lets the software path consume 8 bytes per step (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}
constexpr auto kTables = make_tables();
static_assert(kTables[0][1] == 0xF26B8303, "CRC32C table entry 1");
static_assert(kTables[0][128] == kPolynomial, "CRC32C table entry 128");

uint64_t load_le64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

uint32_t load_le32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

void store_le64(std::byte* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
}

void store_le32(std::byte* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}

// Page sizes are powers of two >= 4096; anything else is a caller bug (the pool validates
// user input before it gets here).
void check_page_size(size_t page_size) {
  CALICO_CHECK(page_size >= 4096 && (page_size & (page_size - 1)) == 0);
}

bool all_zero(const std::byte* p, size_t n) {
  CALICO_DCHECK(n % sizeof(uint64_t) == 0);
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    acc |= w;
    if (acc != 0) return false;
  }
  return true;
}

using CrcFn = uint32_t (*)(const void*, size_t, uint32_t);

CrcFn choose_crc_impl() {
  return detail::has_hardware_crc32c() ? &detail::crc32c_hardware : &detail::crc32c_software;
}

}  // namespace

namespace detail {

uint32_t crc32c_software(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const std::byte*>(data);
  uint32_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = kTables[0][(c ^ static_cast<uint8_t>(*p)) & 0xFF] ^ (c >> 8);
    ++p;
    --n;
  }
  while (n >= 8) {
    const uint64_t w = load_le64(p) ^ c;
    c = kTables[7][w & 0xFF] ^ kTables[6][(w >> 8) & 0xFF] ^ kTables[5][(w >> 16) & 0xFF] ^
        kTables[4][(w >> 24) & 0xFF] ^ kTables[3][(w >> 32) & 0xFF] ^
        kTables[2][(w >> 40) & 0xFF] ^ kTables[1][(w >> 48) & 0xFF] ^ kTables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = kTables[0][(c ^ static_cast<uint8_t>(*p)) & 0xFF] ^ (c >> 8);
    ++p;
    --n;
  }
  return ~c;
}

#if CALICO_HAVE_SSE42_PATH

__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(const void* data, size_t n,
                                                            uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);  // x86 is little-endian: the instruction wants LE words
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n > 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  return ~c;
}

bool has_hardware_crc32c() {
  __builtin_cpu_init();  // safe to call repeatedly; needed if we run before constructors
  return __builtin_cpu_supports("sse4.2");
}

#else

uint32_t crc32c_hardware(const void* data, size_t n, uint32_t crc) {
  CALICO_CHECK(!"crc32c_hardware called on a CPU without SSE4.2");
  return crc32c_software(data, n, crc);
}

bool has_hardware_crc32c() { return false; }

#endif

}  // namespace detail

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  static const CrcFn impl = choose_crc_impl();
  return impl(data, n, crc);
}

void stamp_page(std::byte* page, size_t page_size, PageId pid) {
  CALICO_CHECK(page != nullptr);
  check_page_size(page_size);
  std::byte* trailer = page + page_size - kTrailerBytes;
  store_le64(trailer + offsetof(PageTrailer, page_id), pid.raw);
  store_le32(trailer + offsetof(PageTrailer, magic), kPageMagic);
  const uint32_t crc = crc32c(page, page_size - sizeof(uint32_t));
  store_le32(trailer + offsetof(PageTrailer, crc32c), crc);
  CALICO_DCHECK(verify_page(page, page_size, pid) == PageCheck::kOk);
}

PageCheck verify_page(const std::byte* page, size_t page_size, PageId pid) {
  CALICO_CHECK(page != nullptr);
  check_page_size(page_size);
  const std::byte* trailer = page + page_size - kTrailerBytes;
  // A matching (non-zero) magic rules out the zero page, so the zero scan only runs for
  // blocks that are either never written or corrupt.
  if (load_le32(trailer + offsetof(PageTrailer, magic)) != kPageMagic) {
    return all_zero(page, page_size) ? PageCheck::kZeroPage : PageCheck::kMismatch;
  }
  if (load_le64(trailer + offsetof(PageTrailer, page_id)) != pid.raw) return PageCheck::kMismatch;
  const uint32_t stored = load_le32(trailer + offsetof(PageTrailer, crc32c));
  return stored == crc32c(page, page_size - sizeof(uint32_t)) ? PageCheck::kOk
                                                             : PageCheck::kMismatch;
}

}  // namespace calico::io
