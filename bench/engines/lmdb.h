// LMDB (liblmdb, Debian's 0.9.24): the one place the benchmarks open and configure it. Its
// users: the YCSB adapter (ycsb/lmdb_kv.cc) and the TPC-C peer (tpcc/peers/lmdb_tpcc.cc).
//
// Entry points:
//   Lmdb(options)      one environment configured as below; the destructor closes it
//   env(), map_bytes()
//   describe()         "lmdb <version>: <flags> (no WRITEMAP), map <N> MB"
//   lmdb_val / lmdb_view   conversions of the adapters
//
// Configuration (what the papers do, what we set), the same for every experiment:
//  - Calico's paper (section 6) runs LMDB 0.9.31 as the mmap-based key-value store;
//    PrediCache's (section 6) enables MDB_NOSYNC ("pages are only flushed when necessary")
//    and disables OS read-ahead. We have Debian's 0.9.24 and set kFlags: MDB_NOSYNC |
//    MDB_NOMETASYNC (no fsync at commit), MDB_NORDAHEAD, and MDB_NOTLS (a read transaction
//    belongs to its handle or thread context, not to the OS thread's slot). MDB_WRITEMAP is
//    off: not measured here, so LMDB's default (writes through write()).
//  - Map size: max(1 GB, what the caller asks for), a sparse reservation.
//  - Cache: LMDB reads through the OS page cache, which LMDB cannot limit: a run's cache
//    bytes are NOT enforced (the adapters' cache_enforced() is false); a larger-than-memory
//    setting needs a memory cgroup around the process, and the reports say so.
// What differs per experiment is chosen by the caller and stated in its configuration line:
// the map it asks for (YCSB: 8 x the estimated data; TPC-C: a multiple of its sizing
// estimate), the reader slots (the threads plus the transactions the adapter opens besides
// theirs) and the named databases (TPC-C: one per table; YCSB: the unnamed one only).
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace calico::bench::engines {

inline constexpr unsigned kLmdbFlags = MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOTLS | MDB_NORDAHEAD;
inline constexpr uint64_t kLmdbMinMapBytes = uint64_t{1} << 30;

struct LmdbOptions {
  std::string dir;          // the engine's directory (must exist)
  uint64_t map_bytes = 0;   // raised to kLmdbMinMapBytes
  unsigned max_readers = 0;
  unsigned max_dbs = 0;     // named databases; 0: the unnamed one only (LMDB's default)
};

class Lmdb {
 public:
  // Errors: std::runtime_error("lmdb: <call>: <error>"), the environment closed.
  explicit Lmdb(const LmdbOptions& options);
  ~Lmdb() { mdb_env_close(env_); }
  Lmdb(const Lmdb&) = delete;
  Lmdb& operator=(const Lmdb&) = delete;

  MDB_env* env() const { return env_; }
  uint64_t map_bytes() const { return map_bytes_; }
  std::string describe() const;

 private:
  MDB_env* env_ = nullptr;
  uint64_t map_bytes_ = 0;
};

// Throws std::runtime_error("lmdb: <what>: <error>") unless rc is MDB_SUCCESS.
void lmdb_check(int rc, std::string_view what);
inline MDB_val lmdb_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view lmdb_view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

}  // namespace calico::bench::engines
