// RocksDB (librocksdb, Debian's 7.8.3): the one place the benchmarks open and configure it.
// Its user: the YCSB adapter (ycsb/rocksdb_kv.cc).
//
// Entry points:
//   RocksDb(options)   one database configured as below; the destructor closes it
//   db(), write_options()
//   describe()         "rocksdb <version>: <the settings below>"
//   rocksdb_check / rocksdb_slice   error and slice helpers of the adapters
//
// Configuration (what the papers do, what we set):
//  - Calico's and PrediCache's papers do not run RocksDB; DESIGN.md names it as a Debian peer.
//    We follow their rules for every competitor (logging off, direct I/O where applicable,
//    no sync): write_options() has disableWAL = true, sync = false.
//  - Block cache: one LRU cache of cache_bytes (NewLRUCache), with index and filter blocks
//    charged to it (cache_index_and_filter_blocks, L0's pinned), so that cache_bytes bounds
//    what RocksDB caches; use_direct_reads = true so the OS page cache does not act as a
//    second, unlimited cache. Flushes and compactions write buffered (not read back through
//    the page cache: reads are direct).
//  - Bloom filters of 10 bits per key (full filters); compression off; 4 KB blocks (default);
//    memtable cache_bytes / 4 within [4 MB, 64 MB (the default)], at most 2 of them, so that
//    RocksDB's memory stays near cache_bytes when the cache is small (larger-than-memory runs
//    hold every engine to cache + slack in a memory cgroup: bench/experiments/ycsb_ltm.sh);
//    max_open_files = -1.
//  - The DB object is thread-safe: handles share it.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace calico::bench::engines {

struct RocksDbOptions {
  std::string dir;           // the database's directory: created, must not hold a database
  uint64_t cache_bytes = 0;  // the block cache
};

class RocksDb {
 public:
  // Errors: std::runtime_error("rocksdb: DB::Open: <status>").
  explicit RocksDb(const RocksDbOptions& options);
  ~RocksDb();
  RocksDb(const RocksDb&) = delete;
  RocksDb& operator=(const RocksDb&) = delete;

  rocksdb::DB* db() const { return db_.get(); }
  // WAL off, no sync: every write of the benchmarks goes through these.
  const rocksdb::WriteOptions& write_options() const { return write_options_; }
  std::string describe() const;

 private:
  uint64_t cache_bytes_;
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::DB> db_;
};

// Throws std::runtime_error("rocksdb: <what>: <status>") unless s is ok.
void rocksdb_check(const rocksdb::Status& s, std::string_view what);
inline rocksdb::Slice rocksdb_slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

}  // namespace calico::bench::engines
