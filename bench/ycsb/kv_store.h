// KvStore / KvHandle: the small key-value interface behind which every engine of the YCSB
// driver (bench/ycsb/ycsb.h) sits, so that one workload driver runs all of them (STYLE.md 11).
//
// Entry points:
//   open_kv(system, config)        opens a fresh store: "calico" (the array translation),
//                                  "calico:<translation>" (include/calico/variants.h), "lmdb",
//                                  "rocksdb", "wiredtiger"
//   kv_systems()                   the engines open_kv accepts
//   check_system(system)           throws std::invalid_argument / calico::Error naming a bad one
//   calico_translation(system)     the translation of a calico system, "" for other engines
//   KvStore::load(n, make, prog)   loads n records in key order (bulk where the engine can)
//   KvStore::handle()              a per-thread handle (sessions, read transactions, cursors)
//   KvHandle::insert / read / update / scan / read_modify_write
//   encode_key / decode_key        8-byte big-endian keys (byte order = numeric order)
//   make_value / check_value       self-checking values: bytes 0..7 repeat the key
//
// Contracts:
//  - A KvStore is opened on a directory that is empty (or missing); it owns it until it is
//    destroyed. The destructor closes the engine (checkpoint/flush), then the caller may
//    delete the directory.
//  - handle() may be called from any thread; the returned handle is then used by that one
//    thread only, and must be destroyed before the store. Operations of different handles may
//    run concurrently; load() must run alone (no handle in use).
//  - Keys are exactly kKeyBytes bytes; values are config.value_bytes long.
//  - Errors are thrown (std::runtime_error naming the engine call, or calico::Error); a store
//    is not usable after an error in load().
// The per-operation virtual call costs about a nanosecond, well under the cheapest engine's
// operation (a B-tree descent); the adapters are not on anyone's hot path but the driver's.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/function_ref.h"

namespace calico::bench::kv {

inline constexpr size_t kKeyBytes = 8;
inline constexpr size_t kMinValueBytes = 16;  // key (8) + version (8)
inline constexpr size_t kMaxValueBytes = 500;  // under the B-tree's 512-byte value limit

struct KvConfig {
  std::string data_dir;             // the engine's directory; created, must be empty
  uint64_t cache_bytes = 256 << 20;  // buffer pool / block cache / WT cache
  uint64_t data_bytes = 0;          // estimated size of the loaded data (sizes LMDB's map)
  size_t value_bytes = 120;
  unsigned max_threads = 1;         // handles in use at once (LMDB readers, WT sessions)
  // calico with a tiered translation only (array_tiered): a far frame tier of this many bytes
  // behind the pool (docs/results/tiers.md; 0: none), of kind far_tier: remote-numa, cxl (emulated),
  // local, or numa:<node>. Single-tier translations ignore it (their configuration says so).
  uint64_t far_bytes = 0;
  std::string far_tier = "remote-numa";
};

// Cache counters where the engine exposes them cheaply (calico's pool).
struct CacheCounters {
  uint64_t hits = 0;
  uint64_t accesses = 0;
  // A far tier's traffic (calico with a tiered translation; 0 otherwise).
  uint64_t far_hits = 0;        // accesses that found their page in the far tier
  uint64_t promotions = 0;      // pages moved far -> fast
  uint64_t demotions = 0;       // pages moved fast -> far
  uint64_t far_evictions = 0;   // pages that left the far tier for disk
  uint64_t migration_bytes = 0;
  uint64_t migration_wait_ns = 0;  // time moves waited for the far tier's bandwidth
  uint64_t migration_ns = 0;       // time spent migrating (copies, waits, discards, publishing)
  uint64_t migration_fault_ns = 0;    // of which (batched migration, vmcache_n): backing the
  uint64_t migration_copy_ns = 0;     // destinations, copies, discards of the sources
  uint64_t migration_discard_ns = 0;
};

class KvHandle {
 public:
  virtual ~KvHandle() = default;
  // Adds key -> value. Pre: the key is absent (engines may overwrite; none is asked to).
  virtual void insert(std::string_view key, std::string_view value) = 0;
  // Copies the value of key into *out; false when absent.
  virtual bool read(std::string_view key, std::string* out) = 0;
  // Replaces the value of key (written as an upsert in every engine).
  virtual void update(std::string_view key, std::string_view value) = 0;
  // Calls visit(key, value) for up to `count` records with key >= start, in key order;
  // returns how many it visited. The views are valid during the call only.
  virtual uint64_t scan(std::string_view start, uint64_t count,
                        FunctionRef<void(std::string_view, std::string_view)> visit) = 0;
  // YCSB's read-modify-write: read, modify(&value), update. Not atomic (as in YCSB: two
  // operations); false (and nothing written) when the key is absent.
  virtual bool read_modify_write(std::string_view key, FunctionRef<void(std::string*)> modify) {
    if (!read(key, &rmw_buffer_)) return false;
    modify(&rmw_buffer_);
    update(key, rmw_buffer_);
    return true;
  }

 private:
  std::string rmw_buffer_;
};

class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual std::string name() const = 0;
  // One line: the engine's settings that matter for the comparison (printed with each run).
  virtual std::string configuration() const = 0;
  // False when cache_bytes is not a real limit (LMDB: the OS page cache, bounded only by
  // the cgroup); reports must then say so.
  virtual bool cache_enforced() const { return true; }
  // Loads records 0..n-1 into an empty store in key order: make(i, &key, &value) produces
  // record i (keys strictly increasing); progress(done) is called now and then. Runs alone.
  virtual void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
                    FunctionRef<void(uint64_t)> progress) = 0;
  virtual std::unique_ptr<KvHandle> handle() = 0;
  virtual std::optional<CacheCounters> cache_counters() const { return std::nullopt; }
};

// Opens a fresh store of `system` in config.data_dir. Errors: std::invalid_argument for an
// unknown system; engine errors as std::runtime_error.
std::unique_ptr<KvStore> open_kv(std::string_view system, const KvConfig& config);
std::vector<std::string> kv_systems();
void check_system(std::string_view system);
std::string_view calico_translation(std::string_view system);

// --- keys and values ----------------------------------------------------------------------

inline void encode_key(uint64_t k, char out[kKeyBytes]) {
  for (size_t i = 0; i < kKeyBytes; ++i) out[i] = static_cast<char>(k >> (8 * (kKeyBytes - 1 - i)));
}
inline uint64_t decode_key(std::string_view b) {
  uint64_t k = 0;
  for (size_t i = 0; i < kKeyBytes && i < b.size(); ++i) k = (k << 8) | static_cast<uint8_t>(b[i]);
  return k;
}

// A value of `bytes` (>= kMinValueBytes) bytes: key (big-endian), version (8 bytes), then a
// filler derived from both.
inline void make_value(uint64_t key, uint64_t version, size_t bytes, std::string* out) {
  out->resize(bytes);
  char* p = out->data();
  encode_key(key, p);
  std::memcpy(p + 8, &version, 8);
  uint64_t x = (key * 0x9E3779B97F4A7C15ull) ^ version;
  for (size_t i = 16; i < bytes; ++i) p[i] = static_cast<char>('a' + (x >> (i % 57)) % 26);
}
// The self-check of every read: right length, and the first 8 bytes encode the key.
inline bool check_value(std::string_view v, uint64_t key, size_t bytes) {
  return v.size() == bytes && decode_key(v.substr(0, kKeyBytes)) == key;
}

}  // namespace calico::bench::kv
