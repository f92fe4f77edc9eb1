// The TPC-C peer on LMDB: open_lmdb_store. The engine is opened and configured in
// engines/lmdb.h (as for YCSB: MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOTLS | MDB_NORDAHEAD, no
// MDB_WRITEMAP; the OS page cache, not limited by LMDB: cache_enforced() is false).
//
// What this peer adds: one named database "tpcc_<name>" per TPC-C table or index; map size:
// the options' map bytes (the driver passes a multiple of the sizing estimate; a full map is
// reported naming it); reader slots: threads + 16. Writes: one write transaction per
// operation; reads and scans: the thread's read-only transaction renewed per operation
// (peer_store.h).
#include <fmt/format.h>
#include <lmdb.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <vector>

#include "engines/lmdb.h"
#include "tpcc/peers/peer_store.h"
#include "tpcc/peers/thread_contexts.h"

namespace calico::bench::tpcc::peers {
namespace {

using engines::lmdb_val;
using engines::lmdb_view;

struct LmdbContext {
  MDB_txn* rtxn = nullptr;  // reset between operations: pins no snapshot while idle
  std::string buf;
  ~LmdbContext() {
    if (rtxn) mdb_txn_abort(rtxn);
  }
};

class LmdbStore final : public PeerStore {
 public:
  explicit LmdbStore(const PeerOptions& o)
      : lmdb_({.dir = o.dir, .map_bytes = o.map_bytes, .max_readers = o.max_threads + 16, .max_dbs = kMaxPeerTables}),
        env_(lmdb_.env()),
        map_bytes_(lmdb_.map_bytes()),
        contexts_([this] { return make_context(); }) {}
  ~LmdbStore() override { contexts_.close_all(); }  // then lmdb_ closes the environment

  std::string name() const override { return "lmdb"; }
  std::string configuration() const override {
    return fmt::format("{}, one named database per TPC-C table, one write txn per write op, reads in a per-thread "
                       "read txn renewed per op; cache = OS page cache (NOT limited)",
                       lmdb_.describe());
  }
  bool cache_enforced() const override { return false; }

  uint32_t create_table(const std::string& name) override {
    if (dbis_.size() >= kMaxPeerTables) throw std::logic_error("lmdb: more than kMaxPeerTables tables");
    MDB_txn* txn;
    check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin", name);
    MDB_dbi dbi;
    int rc = mdb_dbi_open(txn, ("tpcc_" + name).c_str(), MDB_CREATE, &dbi);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      check(rc, "mdb_dbi_open", name);
    }
    check(mdb_txn_commit(txn), "mdb_txn_commit", name);
    dbis_.push_back(dbi);
    names_.push_back(name);
    return static_cast<uint32_t>(dbis_.size() - 1);
  }

  bool read(uint32_t t, std::string_view key, std::string* out) override {
    LmdbContext& ctx = contexts_.get();
    Reader r(*this, ctx, t);
    MDB_val k = lmdb_val(key), v;
    const int rc = mdb_get(ctx.rtxn, dbi(t), &k, &v);
    if (rc == MDB_NOTFOUND) return false;
    check(rc, "mdb_get", t);
    out->assign(lmdb_view(v));
    return true;
  }

  bool update(uint32_t t, std::string_view key, FunctionRef<void(std::span<std::byte>)> fn) override {
    LmdbContext& ctx = contexts_.get();
    Writer w(*this, t);
    MDB_val k = lmdb_val(key), v;
    int rc = mdb_get(w.txn, dbi(t), &k, &v);
    if (rc == MDB_NOTFOUND) return false;  // Writer aborts
    check(rc, "mdb_get", t);
    ctx.buf.assign(lmdb_view(v));
    fn(std::span<std::byte>(reinterpret_cast<std::byte*>(ctx.buf.data()), ctx.buf.size()));
    MDB_val nv = lmdb_val(ctx.buf);
    check(mdb_put(w.txn, dbi(t), &k, &nv, 0), "mdb_put", t);
    w.commit();
    return true;
  }

  bool insert(uint32_t t, std::string_view key, std::string_view value) override {
    Writer w(*this, t);
    MDB_val k = lmdb_val(key), v = lmdb_val(value);
    const int rc = mdb_put(w.txn, dbi(t), &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) return false;
    check(rc, "mdb_put", t);
    w.commit();
    return true;
  }

  bool remove(uint32_t t, std::string_view key) override {
    Writer w(*this, t);
    MDB_val k = lmdb_val(key);
    const int rc = mdb_del(w.txn, dbi(t), &k, nullptr);
    if (rc == MDB_NOTFOUND) return false;
    check(rc, "mdb_del", t);
    w.commit();
    return true;
  }

  void scan(uint32_t t, std::string_view start, FunctionRef<bool(std::string_view, std::string_view)> fn) override {
    LmdbContext& ctx = contexts_.get();
    Reader r(*this, ctx, t);
    MDB_cursor* c;
    check(mdb_cursor_open(ctx.rtxn, dbi(t), &c), "mdb_cursor_open", t);
    struct Close {
      MDB_cursor* c;
      ~Close() { mdb_cursor_close(c); }
    } close{c};
    MDB_val k = lmdb_val(start), v;
    // LMDB refuses an empty key: an empty start is the first record.
    int rc = mdb_cursor_get(c, &k, &v, start.empty() ? MDB_FIRST : MDB_SET_RANGE);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      if (!fn(lmdb_view(k), lmdb_view(v))) return;
    }
    if (rc != MDB_NOTFOUND) check(rc, "mdb_cursor_get", t);
  }

  void after_load() override { check(mdb_env_sync(env_, 1), "mdb_env_sync", ""); }
  std::string size_summary() override {
    MDB_envinfo info;
    MDB_stat st;
    check(mdb_env_info(env_, &info), "mdb_env_info", "");
    check(mdb_env_stat(env_, &st), "mdb_env_stat", "");
    const uint64_t pages = info.me_last_pgno + 1;
    return fmt::format("{} pages of {} bytes in use ({:.1f} MB), map {} MB", pages, st.ms_psize,
                       static_cast<double>(pages * st.ms_psize) / 1048576.0, map_bytes_ >> 20);
  }

 private:
  // The thread's read transaction, renewed for one operation and reset after it.
  struct Reader {
    LmdbContext& ctx;
    Reader(LmdbStore& s, LmdbContext& c, uint32_t t) : ctx(c) { s.check(mdb_txn_renew(c.rtxn), "mdb_txn_renew", t); }
    ~Reader() { mdb_txn_reset(ctx.rtxn); }
  };
  // One write transaction; aborted unless commit() ran.
  struct Writer {
    LmdbStore& s;
    uint32_t t;
    MDB_txn* txn = nullptr;
    Writer(LmdbStore& store, uint32_t table) : s(store), t(table) {
      s.check(mdb_txn_begin(s.env_, nullptr, 0, &txn), "mdb_txn_begin", t);
    }
    void commit() {
      MDB_txn* x = txn;
      txn = nullptr;
      s.check(mdb_txn_commit(x), "mdb_txn_commit", t);  // frees x, success or not
    }
    ~Writer() {
      if (txn) mdb_txn_abort(txn);
    }
  };

  std::unique_ptr<LmdbContext> make_context() {
    auto ctx = std::make_unique<LmdbContext>();
    check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &ctx->rtxn), "mdb_txn_begin(read)", "");
    mdb_txn_reset(ctx->rtxn);
    return ctx;
  }
  MDB_dbi dbi(uint32_t t) const {
    if (t >= dbis_.size()) throw std::logic_error("lmdb: no table slot " + std::to_string(t));
    return dbis_[t];
  }
  void check(int rc, const char* what, uint32_t t) const { check(rc, what, t < names_.size() ? names_[t] : "?"); }
  void check(int rc, const char* what, const std::string& table) const {
    if (rc == MDB_SUCCESS) return;
    std::string hint;
    if (rc == MDB_MAP_FULL) {
      hint = fmt::format(" (the map of {} MB is full: the driver sizes it from the database estimate)", map_bytes_ >> 20);
    }
    throw std::runtime_error(fmt::format("lmdb: {}{}: {}{}", what, table.empty() ? "" : " on tpcc_" + table,
                                         mdb_strerror(rc), hint));
  }

  engines::Lmdb lmdb_;  // declared first: closed after the thread contexts
  MDB_env* env_;
  uint64_t map_bytes_;
  std::vector<MDB_dbi> dbis_;  // by slot; fixed once the tables are created
  std::vector<std::string> names_;
  ThreadContexts<LmdbContext> contexts_;
};

}  // namespace

std::unique_ptr<PeerStore> open_lmdb_store(const PeerOptions& options) { return std::make_unique<LmdbStore>(options); }

}  // namespace calico::bench::tpcc::peers
