// The LMDB adapter of the YCSB driver: open_lmdb(config) (registered in kv_store.cc as
// "lmdb"). The engine is opened and configured in engines/lmdb.h (its cache, the OS page
// cache, is not limited by cache_bytes: cache_enforced() is false).
//
// What this adapter adds:
//  - Map size: 8 x the estimated data (at least engines::kLmdbMinMapBytes); reader slots:
//    threads + 8; the unnamed database.
//  - Writes: one write transaction per operation (LMDB serialises writers on its lock).
//    Reads: each handle keeps one read-only transaction, renewed per read and reset after
//    (so the reader never pins an old snapshot); scans use a cursor in it.
//  - Load: write transactions of 10,000 records with MDB_APPEND (keys arrive sorted).
#include <fmt/format.h>
#include <lmdb.h>

#include <algorithm>
#include <stdexcept>

#include "engines/lmdb.h"
#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

using engines::lmdb_check;
using engines::lmdb_val;

class LmdbHandle final : public KvHandle {
 public:
  LmdbHandle(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {
    lmdb_check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &rtxn_), "mdb_txn_begin(read)");
    mdb_txn_reset(rtxn_);
  }
  ~LmdbHandle() override { mdb_txn_abort(rtxn_); }

  void insert(std::string_view key, std::string_view value) override { put(key, value); }
  void update(std::string_view key, std::string_view value) override { put(key, value); }
  bool read(std::string_view key, std::string* out) override {
    lmdb_check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    MDB_val k = lmdb_val(key), v;
    int rc = mdb_get(rtxn_, dbi_, &k, &v);
    if (rc == MDB_SUCCESS) out->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    mdb_txn_reset(rtxn_);
    if (rc == MDB_NOTFOUND) return false;
    lmdb_check(rc, "mdb_get");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    lmdb_check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    MDB_cursor* c;
    int rc = mdb_cursor_open(rtxn_, dbi_, &c);
    if (rc != MDB_SUCCESS) {
      mdb_txn_reset(rtxn_);
      lmdb_check(rc, "mdb_cursor_open");
    }
    MDB_val k = lmdb_val(start), v;
    uint64_t n = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS && n < count;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      visit(std::string_view(static_cast<const char*>(k.mv_data), k.mv_size),
            std::string_view(static_cast<const char*>(v.mv_data), v.mv_size));
      ++n;
    }
    mdb_cursor_close(c);
    mdb_txn_reset(rtxn_);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) lmdb_check(rc, "mdb_cursor_get");
    return n;
  }

 private:
  void put(std::string_view key, std::string_view value) {
    MDB_txn* txn;
    lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin(write)");
    MDB_val k = lmdb_val(key), v = lmdb_val(value);
    int rc = mdb_put(txn, dbi_, &k, &v, 0);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      lmdb_check(rc, "mdb_put");
    }
    lmdb_check(mdb_txn_commit(txn), "mdb_txn_commit");
  }

  MDB_env* env_;
  MDB_dbi dbi_;
  MDB_txn* rtxn_ = nullptr;
};

class LmdbStore final : public KvStore {
 public:
  explicit LmdbStore(const KvConfig& config)
      : lmdb_({.dir = config.data_dir, .map_bytes = config.data_bytes * 8, .max_readers = config.max_threads + 8}),
        env_(lmdb_.env()) {
    MDB_txn* txn;
    lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    int rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
    if (rc != MDB_SUCCESS) mdb_txn_abort(txn);
    lmdb_check(rc, "mdb_dbi_open");
    lmdb_check(mdb_txn_commit(txn), "mdb_txn_commit");
  }
  ~LmdbStore() override { mdb_env_sync(env_, 1); }  // then lmdb_ closes the environment

  std::string name() const override { return "lmdb"; }
  std::string configuration() const override {
    return fmt::format("{}, one write txn per op, cache = OS page cache (NOT limited by cache_bytes; only a cgroup can)",
                       lmdb_.describe());
  }
  bool cache_enforced() const override { return false; }

  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    constexpr uint64_t kBatch = 10000;
    std::string key, value;
    for (uint64_t i = 0; i < n;) {
      MDB_txn* txn;
      lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin(load)");
      for (uint64_t end = std::min(n, i + kBatch); i < end; ++i) {
        make(i, &key, &value);
        MDB_val k = lmdb_val(key), v = lmdb_val(value);
        int rc = mdb_put(txn, dbi_, &k, &v, MDB_APPEND);
        if (rc != MDB_SUCCESS) {
          mdb_txn_abort(txn);
          lmdb_check(rc, "mdb_put(load)");
        }
      }
      lmdb_check(mdb_txn_commit(txn), "mdb_txn_commit(load)");
      progress(i);
    }
    lmdb_check(mdb_env_sync(env_, 1), "mdb_env_sync");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<LmdbHandle>(env_, dbi_); }

 private:
  engines::Lmdb lmdb_;
  MDB_env* env_;
  MDB_dbi dbi_ = 0;
};

}  // namespace

std::unique_ptr<KvStore> open_lmdb(const KvConfig& config) { return std::make_unique<LmdbStore>(config); }

}  // namespace calico::bench::kv
