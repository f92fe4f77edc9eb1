// RocksDB: see rocksdb.h.
#include "engines/rocksdb.h"

#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>

#include <algorithm>
#include <stdexcept>

namespace calico::bench::engines {
namespace {

// The memtable: a quarter of the cache within [4 MB, 64 MB].
size_t memtable_bytes(uint64_t cache_bytes) {
  return std::min<size_t>(size_t{64} << 20, std::max<size_t>(size_t{4} << 20, cache_bytes / 4));
}

}  // namespace

void rocksdb_check(const rocksdb::Status& s, std::string_view what) {
  if (!s.ok()) throw std::runtime_error(fmt::format("rocksdb: {}: {}", what, s.ToString()));
}

RocksDb::RocksDb(const RocksDbOptions& o) : cache_bytes_(o.cache_bytes) {
  write_options_.disableWAL = true;
  write_options_.sync = false;
  rocksdb::Options opt;
  opt.create_if_missing = true;
  opt.error_if_exists = true;
  opt.compression = rocksdb::kNoCompression;
  opt.use_direct_reads = true;
  opt.max_open_files = -1;
  opt.write_buffer_size = memtable_bytes(o.cache_bytes);
  opt.max_write_buffer_number = 2;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(o.cache_bytes);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  opt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  rocksdb::DB* db = nullptr;
  rocksdb_check(rocksdb::DB::Open(opt, o.dir, &db), "DB::Open");
  db_.reset(db);
}

RocksDb::~RocksDb() {
  if (db_) db_->Close();
}

std::string RocksDb::describe() const {
  return fmt::format("rocksdb {}.{}.{}: WAL off, no sync, LRU block cache {} MB (index+filter in cache), "
                     "memtable {} MB x2, bloom 10 bits/key, use_direct_reads, no compression",
                     ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, cache_bytes_ >> 20,
                     memtable_bytes(cache_bytes_) >> 20);
}

}  // namespace calico::bench::engines
