// Helpers of PoolCore that do not depend on the translation policy (pool_support.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

#include "calico/page_id.h"
#include "calico/options.h"
#include "calico/checks.h"
#include "io/checksum.h"
#include "translation/entry.h"

namespace calico::pool {

// Pool ids are never reused (unlike addresses): path caches and per-thread rings key on them.
extern std::atomic<uint64_t> next_pool_uid;

std::string space_path(const std::string& dir, SpaceId id);
// Throws kInvalidArgument naming the first bad option.
void validate_options(const PoolOptions& o);
// Raises the error a failed page read deserves. `result` is bytes read or -errno.
[[noreturn]] void throw_read_error(PageId pid, int result, size_t page_size);
// Judges a page read from `path`: only a page whose trailer matches (io::PageCheck::kOk) is
// accepted. An all-zero block is refused too: every block below a space's durable count was
// written (README rule 6), so a zero one is a lost write, not an empty page.
// Errors: kChecksumMismatch naming the page and the file.
void check_read_page(io::PageCheck check, PageId pid, const std::string& path);

// Gives back an entry this thread claimed out of 0 (a fault's or an allocation's loading word,
// a prefetch's io-pending word). Nobody else writes a claimed word (movers install by CAS out
// of 0 and latch only resident words), so the claim is always still there: the check says so.
inline void undo_claim(translation::Entry& e, translation::EntryWord claimed) {
  [[maybe_unused]] const bool ours = translation::release_claim(e, claimed);
  CALICO_DCHECK(ours);
}

// "Input/output error", or "short write: 2048 of 4096 bytes", for a page transfer's result.
inline std::string transfer_error_text(int result, size_t page_size) {
  if (result < 0) return std::generic_category().message(-result);
  return "short transfer: " + std::to_string(result) + " of " + std::to_string(page_size) + " bytes";
}

}  // namespace calico::pool
