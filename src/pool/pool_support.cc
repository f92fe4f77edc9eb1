// Non-template support of BasicBufferPool (src/pool/definitions.h): option checks,
// file names, read errors, pool ids.
#include "pool/pool_support.h"

#include <cstring>
#include <string>

#include "calico/error.h"

namespace calico::pool {

std::atomic<uint64_t> next_pool_uid{1};

std::string space_path(const std::string& dir, SpaceId id) {
  return dir + "/space_" + std::to_string(id) + ".dat";
}

void validate_options(const PoolOptions& o) {
  auto bad = [](const std::string& why) { throw Error(ErrorCode::kInvalidArgument, why); };
  if (o.data_dir.empty()) bad("data_dir is empty");
  if (o.page_size != 4096 && o.page_size != 8192 && o.page_size != 16384) {
    bad("page_size " + std::to_string(o.page_size) + " is not 4096, 8192 or 16384");
  }
  if (o.pool_bytes / o.page_size < 2) {
    bad(o.tiers.far.frames > 0 ? "pool_bytes (the fast tier, tier 0) holds fewer than 2 pages"
                              : "pool_bytes holds fewer than 2 pages");
  }
  if (o.pool_bytes / o.page_size >= (uint64_t{1} << 31)) bad("pool_bytes holds 2^31 pages or more");
  if (o.max_blocks_per_space == 0 || o.max_blocks_per_space > (uint64_t{1} << 32)) {
    bad("max_blocks_per_space is not in 1 .. 2^32");
  }
  if (o.eviction_batch == 0 || o.eviction_batch > 1024) bad("eviction_batch is not in 1 .. 1024");
  if (o.pool_full_wait_ms == 0 || o.pool_full_wait_ms > 3'600'000) bad("pool_full_wait_ms is not in 1 .. 3600000");
  if (o.async_depth == 0 || o.async_depth > 4096) bad("async_depth is not in 1 .. 4096");
  if (o.sparse_groups.sparse_at == 0 || o.sparse_groups.sparse_at >= o.sparse_groups.dense_at || o.sparse_groups.dense_at > 512) {
    bad("sparse_groups.sparse_at and sparse_groups.dense_at are not 1 <= sparse_at < dense_at <= 512");
  }
  // Tiered memory (pool/features/tiering.h): fast and far frames share one arena and one frame-id
  // space, bounded as pool_bytes alone is.
  if (o.tiers.far.frames > 0) {
    if (o.tiers.far.frames >= (uint64_t{1} << 31) - o.pool_bytes / o.page_size) {
      bad("tiers.far.frames " + std::to_string(o.tiers.far.frames) + " plus the " +
          std::to_string(o.pool_bytes / o.page_size) + " fast frames of pool_bytes reach 2^31 frames");
    }
    memory::tiers::TierConfig c = o.tiers.far;
    c.page_size = o.page_size;
    try {
      memory::tiers::validate(c);
    } catch (const Error& e) {
      const std::string what = e.what();  // "invalid argument: <message>"
      const size_t colon = what.find(": ");
      bad("tiers.far: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
    }
    auto probability = [&](const char* name, double p) {
      if (!(p >= 0 && p <= 1)) bad(std::string(name) + " " + std::to_string(p) + " is not a probability in [0, 1]");
    };
    probability("tiers.promote_on_read", o.tiers.promote_on_read);
    probability("tiers.promote_on_write", o.tiers.promote_on_write);
    if (o.tiers.demotion_batch == 0 || o.tiers.demotion_batch > 65536) bad("tiers.demotion_batch is not in 1 .. 65536");
    if (o.tiers.promotion_batch == 0 || o.tiers.promotion_batch > 4096) bad("tiers.promotion_batch is not in 1 .. 4096");
    if (o.tiers.far_lines_per_access > o.page_size / 64) {
      bad("tiers.far_lines_per_access " + std::to_string(o.tiers.far_lines_per_access) + " exceeds the " +
          std::to_string(o.page_size / 64) + " cache lines of a page");
    }
  }
}

void throw_read_error(PageId pid, int result, size_t page_size) {
  std::string page = "page " + std::to_string(pid.space()) + ":" + std::to_string(pid.block());
  if (result < 0) {
    throw Error(ErrorCode::kIoError, "reading " + page + ": " + std::strerror(-result), pid);
  }
  throw Error(ErrorCode::kShortRead,
              "reading " + page + ": got " + std::to_string(result) + " of " +
                  std::to_string(page_size) + " bytes",
              pid);
}

void check_read_page(io::PageCheck check, PageId pid, const std::string& path) {
  if (check == io::PageCheck::kOk) return;
  std::string page = "page " + std::to_string(pid.space()) + ":" + std::to_string(pid.block()) + " in " + path;
  throw Error(ErrorCode::kChecksumMismatch,
              check == io::PageCheck::kZeroPage ? page + " is all zero: it was never written (a lost write)"
                                                : page + " failed its checksum",
              pid);
}

}  // namespace calico::pool
