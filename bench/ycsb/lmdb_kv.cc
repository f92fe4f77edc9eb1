// The LMDB adapter (liblmdb, Debian's 0.9.24).
//
// Entry point: open_lmdb(config) (registered in kv_store.cc as "lmdb").
//
// Configuration (what the papers do, what we set):
//  - Calico's paper (../shared/papers/calico.txt, sec. 6) runs LMDB 0.9.31 as the mmap-based
//    key-value store; PrediCache's (predictive-translation.txt, sec. 6) enables MDB_NOSYNC
//    ("pages are only flushed when necessary") and disables OS read-ahead. We have Debian's
//    0.9.24 and set MDB_NOSYNC | MDB_NOMETASYNC (no fsync at commit), MDB_NORDAHEAD, and
//    MDB_NOTLS (a read transaction belongs to its handle, not to the OS thread).
//    MDB_WRITEMAP is off: not measured here, so LMDB's default (writes through write()).
//  - Map size: max(1 GB, 8 x the estimated data), a sparse reservation.
//  - Writes: one write transaction per operation (LMDB serialises writers on its lock).
//    Reads: each handle keeps one read-only transaction, renewed per read and reset after
//    (so the reader never pins an old snapshot); scans use a cursor in it.
//  - Load: write transactions of 10,000 records with MDB_APPEND (keys arrive sorted).
//  - Cache: LMDB reads through the OS page cache; its size cannot be limited by LMDB. The
//    cache_bytes of the run is NOT enforced (cache_enforced() is false): a larger-than-
//    memory setting needs a memory cgroup around the process, and the report says so.
#include <fmt/format.h>
#include <lmdb.h>

#include <algorithm>
#include <stdexcept>

#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

void check(int rc, const char* what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error(fmt::format("lmdb: {}: {}", what, mdb_strerror(rc)));
}

MDB_val as_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

class LmdbHandle final : public KvHandle {
 public:
  LmdbHandle(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {
    check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &rtxn_), "mdb_txn_begin(read)");
    mdb_txn_reset(rtxn_);
  }
  ~LmdbHandle() override { mdb_txn_abort(rtxn_); }

  void insert(std::string_view key, std::string_view value) override { put(key, value); }
  void update(std::string_view key, std::string_view value) override { put(key, value); }
  bool read(std::string_view key, std::string* out) override {
    check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    MDB_val k = as_val(key), v;
    int rc = mdb_get(rtxn_, dbi_, &k, &v);
    if (rc == MDB_SUCCESS) out->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    mdb_txn_reset(rtxn_);
    if (rc == MDB_NOTFOUND) return false;
    check(rc, "mdb_get");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    MDB_cursor* c;
    int rc = mdb_cursor_open(rtxn_, dbi_, &c);
    if (rc != MDB_SUCCESS) {
      mdb_txn_reset(rtxn_);
      check(rc, "mdb_cursor_open");
    }
    MDB_val k = as_val(start), v;
    uint64_t n = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS && n < count;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      visit(std::string_view(static_cast<const char*>(k.mv_data), k.mv_size),
            std::string_view(static_cast<const char*>(v.mv_data), v.mv_size));
      ++n;
    }
    mdb_cursor_close(c);
    mdb_txn_reset(rtxn_);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "mdb_cursor_get");
    return n;
  }

 private:
  void put(std::string_view key, std::string_view value) {
    MDB_txn* txn;
    check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin(write)");
    MDB_val k = as_val(key), v = as_val(value);
    int rc = mdb_put(txn, dbi_, &k, &v, 0);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      check(rc, "mdb_put");
    }
    check(mdb_txn_commit(txn), "mdb_txn_commit");
  }

  MDB_env* env_;
  MDB_dbi dbi_;
  MDB_txn* rtxn_ = nullptr;
};

class LmdbStore final : public KvStore {
 public:
  explicit LmdbStore(const KvConfig& config) {
    map_bytes_ = std::max<uint64_t>(uint64_t{1} << 30, config.data_bytes * 8);
    flags_ = MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOTLS | MDB_NORDAHEAD;
    check(mdb_env_create(&env_), "mdb_env_create");
    try {
      check(mdb_env_set_mapsize(env_, map_bytes_), "mdb_env_set_mapsize");
      check(mdb_env_set_maxreaders(env_, config.max_threads + 8), "mdb_env_set_maxreaders");
      check(mdb_env_open(env_, config.data_dir.c_str(), flags_, 0644), "mdb_env_open");
      MDB_txn* txn;
      check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
      int rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
      if (rc != MDB_SUCCESS) mdb_txn_abort(txn);
      check(rc, "mdb_dbi_open");
      check(mdb_txn_commit(txn), "mdb_txn_commit");
    } catch (...) {
      mdb_env_close(env_);
      throw;
    }
  }
  ~LmdbStore() override {
    mdb_env_sync(env_, 1);
    mdb_env_close(env_);
  }

  std::string name() const override { return "lmdb"; }
  std::string configuration() const override {
    return fmt::format("lmdb {}: MDB_NOSYNC|MDB_NOMETASYNC|MDB_NOTLS|MDB_NORDAHEAD (no WRITEMAP), map {} MB, "
                       "one write txn per op, cache = OS page cache (NOT limited by cache_bytes; only a cgroup can)",
                       MDB_VERSION_STRING, map_bytes_ >> 20);
  }
  bool cache_enforced() const override { return false; }

  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    constexpr uint64_t kBatch = 10000;
    std::string key, value;
    for (uint64_t i = 0; i < n;) {
      MDB_txn* txn;
      check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin(load)");
      for (uint64_t end = std::min(n, i + kBatch); i < end; ++i) {
        make(i, &key, &value);
        MDB_val k = as_val(key), v = as_val(value);
        int rc = mdb_put(txn, dbi_, &k, &v, MDB_APPEND);
        if (rc != MDB_SUCCESS) {
          mdb_txn_abort(txn);
          check(rc, "mdb_put(load)");
        }
      }
      check(mdb_txn_commit(txn), "mdb_txn_commit(load)");
      progress(i);
    }
    check(mdb_env_sync(env_, 1), "mdb_env_sync");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<LmdbHandle>(env_, dbi_); }

 private:
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  uint64_t map_bytes_ = 0;
  unsigned flags_ = 0;
};

}  // namespace

std::unique_ptr<KvStore> open_lmdb(const KvConfig& config) { return std::make_unique<LmdbStore>(config); }

}  // namespace calico::bench::kv
