// Test support: temporary data directories, small pools, filling spaces with patterns.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "calico/buffer_pool.h"
#include "support/page_pattern.h"

namespace calico::testing {

// Whether this test binary is built with ThreadSanitizer / AddressSanitizer (gcc defines
// __SANITIZE_*__, clang answers __has_feature).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Why every test that opens a Debian engine library (WiredTiger, RocksDB) is skipped under
// TSan: the library is not instrumented, so TSan cannot see its synchronisation and reports
// its internal handoffs (and the values it hands over) as races. The library's own background
// threads (WiredTiger's eviction and sweep servers, RocksDB's flush and compaction) make this
// so even when the test itself has one thread: a one-thread WiredTiger test failed so in 1 of
// ~40 runs. The release and ASan builds run these tests.
inline constexpr const char* kUninstrumentedEngine =
    "is a Debian library built without TSan instrumentation; TSan reports its internal handoffs as races";

// A fresh directory under /tmp, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/calico-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline PoolOptions small_options(const std::string& dir, uint32_t frames, size_t page_size = 4096) {
  PoolOptions o;
  o.data_dir = dir;
  o.page_size = page_size;
  o.pool_bytes = size_t{frames} * page_size;
  o.max_blocks_per_space = uint64_t{1} << 20;  // 8 MB of address space per space is plenty
  o.eviction_batch = std::min<uint32_t>(8, frames);
  o.prefault_frames = false;
  return o;
}

// Stress tests hold many pins on pools of a few dozen frames, on 2 cores, under sanitizers:
// a thread that finds every frame pinned waits for one (the condition) for up to 30 s, a
// watchdog, instead of the default 200 ms after which a descheduled pin holder made the
// test fail with kPoolFull.
inline PoolOptions stress_options(PoolOptions o) {
  o.pool_full_wait_ms = 30'000;
  return o;
}

// Appends `pages` pages to `space`, page b stamped with stamp_of(b).
template <class Pool, class StampFn>
void fill_space(Pool& pool, SpaceId space, uint64_t pages, StampFn stamp_of) {
  for (uint64_t i = 0; i < pages; ++i) {
    ExclusiveGuard g = pool.allocate(space);
    test::stamp_pattern(g.data(), pool.usable_page_size(), g.page_id(), stamp_of(g.page_id().block()));
    g.mark_dirty();
  }
}

// Expects every page of `space` to carry the pattern with stamp_of(block).
template <class Pool, class StampFn>
void expect_space(Pool& pool, SpaceId space, uint64_t pages, StampFn stamp_of) {
  for (uint64_t b = 0; b < pages; ++b) {
    PageId pid(space, static_cast<BlockId>(b));
    SharedGuard g = pool.pin_shared(pid);
    ASSERT_TRUE(test::check_pattern(g.data(), pool.usable_page_size(), pid)) << "block " << b;
    ASSERT_EQ(test::pattern_stamp(g.data()), stamp_of(b)) << "block " << b;
  }
}

// Runs `fn` and expects a calico::Error with `code`; returns it for further checks.
template <class Fn>
Error expect_error(ErrorCode code, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e;
  }
  ADD_FAILURE() << "expected calico::Error " << to_string(code);
  return Error(code, "not thrown");
}

}  // namespace calico::testing
