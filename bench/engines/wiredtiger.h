// WiredTiger (libwiredtiger, Debian's 3.2.1): the one place the benchmarks open and configure
// it. Its users: the YCSB adapter (ycsb/wiredtiger_kv.cc) and the TPC-C peer
// (tpcc/peers/wiredtiger_tpcc.cc).
//
// Entry points:
//   WiredTiger(options)         one connection configured as below; the destructor closes it
//                               (which takes the one checkpoint of a close)
//   create_table(uri)           a table of raw byte keys and values (kRawTable)
//   describe()                  "wiredtiger <version>: <the wiredtiger_open string>"
//   wt_check / wt_item / wt_view    error and item helpers of the adapters
//
// Configuration (what the papers do, what we set), the same for every experiment:
//  - Calico's paper runs WiredTiger 10.0.2 with write-ahead logging off and the lowest
//    isolation level; PrediCache's does the same and keeps its default page sizes (2 KB
//    inner, 32 KB leaf). We have Debian's 3.2.1 and open it with cache_size = cache_bytes
//    (at least 1 MB), log=(enabled=false), statistics=(none), and no periodic checkpoints
//    (WiredTiger checkpoints only when asked: at close, and where an adapter asks).
//  - Tables: key_format=u, value_format=u (raw bytes; big-endian keys sort numerically under
//    WiredTiger's default byte-wise collation), default page sizes.
//  - Cache: WiredTiger evicts to stay within cache_size; the OS page cache still holds file
//    pages (WiredTiger does not use O_DIRECT by default); direct_io is not set.
// What differs per experiment is chosen by the caller and stated in its configuration line:
//  - session_max: the threads plus the sessions the adapter opens besides theirs.
//  - Session isolation: YCSB's single auto-committed operations run at the paper's lowest
//    level (kReadUncommitted); TPC-C's read-modify-write transactions need kSnapshot (a
//    reserve must see the row it claims; tpcc/peers/peer_store.h).
#pragma once

#include <wiredtiger.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace calico::bench::engines {

inline constexpr const char* kRawTable = "key_format=u,value_format=u";
inline constexpr const char* kReadUncommitted = "isolation=read-uncommitted";
inline constexpr const char* kSnapshot = "isolation=snapshot";

struct WiredTigerOptions {
  std::string dir;           // the engine's directory (must exist)
  uint64_t cache_bytes = 0;  // cache_size, in whole MB (at least 1)
  uint32_t session_max = 0;  // sessions open at once
};

class WiredTiger {
 public:
  explicit WiredTiger(const WiredTigerOptions& options);
  ~WiredTiger();
  WiredTiger(const WiredTiger&) = delete;
  WiredTiger& operator=(const WiredTiger&) = delete;

  WT_CONNECTION* connection() const { return conn_; }
  uint64_t cache_mb() const { return cache_mb_; }
  // Creates `uri` with kRawTable through a session of its own. Errors: std::runtime_error
  // naming the call followed by `context` (e.g. " on warehouse"), as wt_check.
  void create_table(const std::string& uri, std::string_view context = "") const;
  std::string describe() const;

 private:
  WT_CONNECTION* conn_ = nullptr;
  uint64_t cache_mb_ = 0;
  std::string config_;
};

// Throws std::runtime_error("wiredtiger: <what>: <error>") unless rc is 0.
void wt_check(int rc, std::string_view what);
inline WT_ITEM wt_item(std::string_view s) {
  WT_ITEM it{};
  it.data = s.data();
  it.size = s.size();
  return it;
}
inline std::string_view wt_view(const WT_ITEM& it) { return {static_cast<const char*>(it.data), it.size}; }

}  // namespace calico::bench::engines
