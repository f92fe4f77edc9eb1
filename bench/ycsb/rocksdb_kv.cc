// The RocksDB adapter of the YCSB driver: open_rocksdb(config) (registered in kv_store.cc as
// "rocksdb"). The engine is opened and configured in engines/rocksdb.h (WAL off, an LRU block
// cache of cache_bytes holding the index and filter blocks, direct reads, no compression).
//
// What this adapter adds:
//  - Load: WriteBatches of 1,000 records, then Flush and a full CompactRange, so that runs
//    start from an LSM tree in a steady shape (not from a memtable).
//  - A handle holds the read options and an iterator per scan; the DB object is shared.
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <stdexcept>

#include "engines/rocksdb.h"
#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

using engines::rocksdb_check;
using engines::rocksdb_slice;

class RocksHandle final : public KvHandle {
 public:
  explicit RocksHandle(const engines::RocksDb& rocks) : db_(rocks.db()), wo_(rocks.write_options()) {}
  void insert(std::string_view key, std::string_view value) override {
    rocksdb_check(db_->Put(wo_, rocksdb_slice(key), rocksdb_slice(value)), "Put");
  }
  void update(std::string_view key, std::string_view value) override {
    rocksdb_check(db_->Put(wo_, rocksdb_slice(key), rocksdb_slice(value)), "Put");
  }
  bool read(std::string_view key, std::string* out) override {
    rocksdb::Status s = db_->Get(ro_, rocksdb_slice(key), out);
    if (s.IsNotFound()) return false;
    rocksdb_check(s, "Get");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro_));
    uint64_t n = 0;
    for (it->Seek(rocksdb_slice(start)); it->Valid() && n < count; it->Next()) {
      visit(std::string_view(it->key().data(), it->key().size()),
            std::string_view(it->value().data(), it->value().size()));
      ++n;
    }
    rocksdb_check(it->status(), "Iterator");
    return n;
  }

 private:
  rocksdb::DB* db_;
  rocksdb::ReadOptions ro_;
  rocksdb::WriteOptions wo_;
};

class RocksStore final : public KvStore {
 public:
  explicit RocksStore(const KvConfig& config) : rocks_({.dir = config.data_dir, .cache_bytes = config.cache_bytes}) {}

  std::string name() const override { return "rocksdb"; }
  std::string configuration() const override {
    return rocks_.describe() + ", load = batches + flush + full compaction";
  }
  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    rocksdb::DB* db = rocks_.db();
    std::string key, value;
    for (uint64_t i = 0; i < n;) {
      rocksdb::WriteBatch batch;
      for (uint64_t end = std::min(n, i + 1000); i < end; ++i) {
        make(i, &key, &value);
        rocksdb_check(batch.Put(rocksdb_slice(key), rocksdb_slice(value)), "WriteBatch::Put");
      }
      rocksdb_check(db->Write(rocks_.write_options(), &batch), "Write");
      if (i % 100000 < 1000 || i == n) progress(i);
    }
    rocksdb_check(db->Flush(rocksdb::FlushOptions()), "Flush");
    rocksdb_check(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr), "CompactRange");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<RocksHandle>(rocks_); }

 private:
  engines::RocksDb rocks_;
};

}  // namespace

std::unique_ptr<KvStore> open_rocksdb(const KvConfig& config) { return std::make_unique<RocksStore>(config); }

}  // namespace calico::bench::kv
