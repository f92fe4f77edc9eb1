// Non-template helpers of BasicBufferPool, compiled once (buffer_pool.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/page_id.h"
#include "calico/pool_options.h"
#include "io/checksum.h"

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

}  // namespace calico::pool
