// Non-template helpers of BasicBufferPool, compiled once (buffer_pool.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/page_id.h"
#include "calico/pool_options.h"

namespace calico::pool {

// Pool ids are never reused (unlike addresses): path caches and per-thread rings key on them.
extern std::atomic<uint64_t> next_pool_uid;

std::string space_path(const std::string& dir, SpaceId id);
// Throws kInvalidArgument naming the first bad option.
void validate_options(const PoolOptions& o);
// Raises the error a failed page read deserves. `result` is bytes read or -errno.
[[noreturn]] void throw_read_error(PageId pid, int result, size_t page_size);

}  // namespace calico::pool
