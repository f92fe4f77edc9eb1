// The RocksDB adapter (librocksdb, Debian's 7.8.3).
//
// Entry point: open_rocksdb(config) (registered in kv_store.cc as "rocksdb").
//
// Configuration (what the papers do, what we set):
//  - Calico's and PrediCache's papers do not run RocksDB; DESIGN.md names it as a Debian peer.
//    We follow their rules for every competitor (logging off, direct I/O where applicable,
//    no sync): WriteOptions.disableWAL = true, sync = false.
//  - Block cache: one LRU cache of cache_bytes (NewLRUCache), with index and filter blocks
//    charged to it (cache_index_and_filter_blocks, L0's pinned), so that cache_bytes bounds
//    what RocksDB caches; use_direct_reads = true so the OS page cache does not act as a
//    second, unlimited cache. Flushes and compactions write buffered (not read back through
//    the page cache: reads are direct).
//  - Bloom filters of 10 bits per key (full filters); compression off; 4 KB blocks (default);
//    memtable min(64 MB (default), cache_bytes / 4), at most 2 of them, so that RocksDB's
//    memory stays near cache_bytes when the cache is small (larger-than-memory runs hold
//    every engine to cache + slack in a memory cgroup: scripts/ycsb_ltm.sh); max_open_files = -1.
//  - Load: WriteBatches of 1,000 records, then Flush and a full CompactRange, so that runs
//    start from an LSM tree in a steady shape (not from a memtable).
//  - The DB object is thread-safe: a handle only holds the read/write options and an
//    iterator per scan.
#include <fmt/format.h>

#include <algorithm>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>
#include <rocksdb/write_batch.h>

#include <stdexcept>

#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

void check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(fmt::format("rocksdb: {}: {}", what, s.ToString()));
}

rocksdb::Slice as_slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

class RocksHandle final : public KvHandle {
 public:
  explicit RocksHandle(rocksdb::DB* db) : db_(db) {
    wo_.disableWAL = true;
    wo_.sync = false;
  }
  void insert(std::string_view key, std::string_view value) override {
    check(db_->Put(wo_, as_slice(key), as_slice(value)), "Put");
  }
  void update(std::string_view key, std::string_view value) override {
    check(db_->Put(wo_, as_slice(key), as_slice(value)), "Put");
  }
  bool read(std::string_view key, std::string* out) override {
    rocksdb::Status s = db_->Get(ro_, as_slice(key), out);
    if (s.IsNotFound()) return false;
    check(s, "Get");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro_));
    uint64_t n = 0;
    for (it->Seek(as_slice(start)); it->Valid() && n < count; it->Next()) {
      visit(std::string_view(it->key().data(), it->key().size()),
            std::string_view(it->value().data(), it->value().size()));
      ++n;
    }
    check(it->status(), "Iterator");
    return n;
  }

 private:
  rocksdb::DB* db_;
  rocksdb::ReadOptions ro_;
  rocksdb::WriteOptions wo_;
};

class RocksStore final : public KvStore {
 public:
  explicit RocksStore(const KvConfig& config) : cache_bytes_(config.cache_bytes) {
    rocksdb::Options opt;
    opt.create_if_missing = true;
    opt.error_if_exists = true;
    opt.compression = rocksdb::kNoCompression;
    opt.use_direct_reads = true;
    opt.max_open_files = -1;
    opt.write_buffer_size = std::min<size_t>(size_t{64} << 20, std::max<size_t>(size_t{4} << 20, config.cache_bytes / 4));
    opt.max_write_buffer_number = 2;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(config.cache_bytes);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.cache_index_and_filter_blocks = true;
    t.pin_l0_filter_and_index_blocks_in_cache = true;
    opt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    rocksdb::DB* db = nullptr;
    check(rocksdb::DB::Open(opt, config.data_dir, &db), "DB::Open");
    db_.reset(db);
  }
  ~RocksStore() override {
    if (db_) db_->Close();
  }

  std::string name() const override { return "rocksdb"; }
  std::string configuration() const override {
    return fmt::format("rocksdb {}.{}.{}: WAL off, no sync, LRU block cache {} MB (index+filter in cache), "
                       "memtable {} MB x2, bloom 10 bits/key, use_direct_reads, no compression, load = batches + flush + "
                       "full compaction",
                       ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, cache_bytes_ >> 20,
                       std::min<size_t>(size_t{64} << 20, std::max<size_t>(size_t{4} << 20, cache_bytes_ / 4)) >> 20);
  }
  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    std::string key, value;
    for (uint64_t i = 0; i < n;) {
      rocksdb::WriteBatch batch;
      for (uint64_t end = std::min(n, i + 1000); i < end; ++i) {
        make(i, &key, &value);
        check(batch.Put(as_slice(key), as_slice(value)), "WriteBatch::Put");
      }
      check(db_->Write(wo, &batch), "Write");
      if (i % 100000 < 1000 || i == n) progress(i);
    }
    check(db_->Flush(rocksdb::FlushOptions()), "Flush");
    check(db_->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr), "CompactRange");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<RocksHandle>(db_.get()); }

 private:
  uint64_t cache_bytes_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

std::unique_ptr<KvStore> open_rocksdb(const KvConfig& config) { return std::make_unique<RocksStore>(config); }

}  // namespace calico::bench::kv
