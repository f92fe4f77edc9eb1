// The TPC-C peer on WiredTiger: open_wiredtiger_store. The engine is opened and configured in
// engines/wiredtiger.h (as for YCSB: write-ahead logging off, cache_size = the options'
// cache bytes, no periodic checkpoints, raw byte tables, default page sizes).
//
// What this peer adds: one table "table:tpcc_<name>" per TPC-C table or index (the big-endian
// keys of keys.h sort under WiredTiger's byte-wise collation); a checkpoint after the load
// (and the one at close). Each thread has one session (isolation=snapshot: an update is a
// transaction) with one cursor per table (overwrite=false: insert fails on an existing key,
// update and remove on a missing one), made on first use (thread_contexts.h); session_max =
// threads + 16. Isolation: peer_store.h.
#include <fmt/format.h>
#include <wiredtiger.h>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engines/wiredtiger.h"
#include "tpcc/peers/peer_store.h"
#include "tpcc/peers/thread_contexts.h"

namespace calico::bench::tpcc::peers {
namespace {

// Bound on the retries of one operation after WT_ROLLBACK (write conflicts with another
// thread's operation on the same record, which ends within microseconds): far above what
// two workers produce, low enough that a livelock is reported instead of hanging a run.
constexpr int kMaxRetries = 1000000;

using engines::wt_item;
using engines::wt_view;

struct WtContext {
  WT_SESSION* session = nullptr;
  std::array<WT_CURSOR*, kMaxPeerTables> cursors{};
  std::string buf;
  ~WtContext() {
    if (session) session->close(session, nullptr);  // closes the cursors too
  }
};

class WtStore final : public PeerStore {
 public:
  explicit WtStore(const PeerOptions& o)
      : wt_({.dir = o.dir, .cache_bytes = o.cache_bytes, .session_max = o.max_threads + 16}),
        dir_(o.dir),
        contexts_([this] { return make_context(); }) {}
  ~WtStore() override { contexts_.close_all(); }  // then wt_ closes the connection

  std::string name() const override { return "wiredtiger"; }
  std::string configuration() const override {
    return fmt::format("{}; sessions isolation=snapshot, one table per TPC-C table "
                       "(key_format=u,value_format=u, default pages), auto-committed operations, an update = "
                       "reserve + read + write in one transaction, checkpoint after the load and at close",
                       wt_.describe());
  }
  bool cache_enforced() const override { return true; }

  uint32_t create_table(const std::string& name) override {
    if (uris_.size() >= kMaxPeerTables) throw std::logic_error("wiredtiger: more than kMaxPeerTables tables");
    const std::string uri = "table:tpcc_" + name;
    wt_.create_table(uri, " on " + name);
    uris_.push_back(uri);
    return static_cast<uint32_t>(uris_.size() - 1);
  }

  bool read(uint32_t t, std::string_view key, std::string* out) override {
    WT_CURSOR* c = cursor(t);
    for (int attempt = 0;; ++attempt) {
      WT_ITEM k = wt_item(key), v{};
      c->set_key(c, &k);
      int rc = c->search(c);
      if (rc == 0) {
        rc = c->get_value(c, &v);
        if (rc == 0) out->assign(wt_view(v));
      }
      c->reset(c);
      if (rc == 0) return true;
      if (rc == WT_NOTFOUND) return false;
      retry_or_throw(rc, attempt, "search", t);
    }
  }

  bool update(uint32_t t, std::string_view key, FunctionRef<void(std::span<std::byte>)> fn) override {
    WtContext& ctx = contexts_.get();
    WT_SESSION* s = ctx.session;
    WT_CURSOR* c = cursor(ctx, t);
    for (int attempt = 0;; ++attempt) {
      check(s->begin_transaction(s, nullptr), "begin_transaction", t);
      WT_ITEM k = wt_item(key), v{};
      c->set_key(c, &k);
      int rc = c->reserve(c);  // claims the record against concurrent writers (peer_store.h)
      if (rc == 0) {
        c->set_key(c, &k);
        rc = c->search(c);
        if (rc == 0) rc = c->get_value(c, &v);
      }
      if (rc != 0) {
        c->reset(c);
        s->rollback_transaction(s, nullptr);
        if (rc == WT_NOTFOUND) return false;
        retry_or_throw(rc, attempt, "reserve", t);
        continue;
      }
      ctx.buf.assign(wt_view(v));
      try {
        fn(std::span<std::byte>(reinterpret_cast<std::byte*>(ctx.buf.data()), ctx.buf.size()));
      } catch (...) {
        c->reset(c);
        s->rollback_transaction(s, nullptr);
        throw;
      }
      WT_ITEM nv = wt_item(ctx.buf);
      c->set_key(c, &k);
      c->set_value(c, &nv);
      rc = c->update(c);
      c->reset(c);
      if (rc != 0) {
        // fn has run: retrying would run it twice. After a successful reserve no writer can
        // conflict, so this is the engine failing, reported as such.
        s->rollback_transaction(s, nullptr);
        check(rc, "update after reserve", t);
      }
      check(s->commit_transaction(s, nullptr), "commit_transaction", t);
      return true;
    }
  }

  bool insert(uint32_t t, std::string_view key, std::string_view value) override {
    WT_CURSOR* c = cursor(t);
    for (int attempt = 0;; ++attempt) {
      WT_ITEM k = wt_item(key), v = wt_item(value);
      c->set_key(c, &k);
      c->set_value(c, &v);
      const int rc = c->insert(c);
      c->reset(c);
      if (rc == 0) return true;
      if (rc == WT_DUPLICATE_KEY) return false;
      retry_or_throw(rc, attempt, "insert", t);
    }
  }

  bool remove(uint32_t t, std::string_view key) override {
    WT_CURSOR* c = cursor(t);
    for (int attempt = 0;; ++attempt) {
      WT_ITEM k = wt_item(key);
      c->set_key(c, &k);
      const int rc = c->remove(c);
      c->reset(c);
      if (rc == 0) return true;
      if (rc == WT_NOTFOUND) return false;
      retry_or_throw(rc, attempt, "remove", t);
    }
  }

  void scan(uint32_t t, std::string_view start, FunctionRef<bool(std::string_view, std::string_view)> fn) override {
    WT_CURSOR* c = cursor(t);
    struct Reset {
      WT_CURSOR* c;
      ~Reset() { c->reset(c); }
    } reset{c};
    WT_ITEM k = wt_item(start), v{};
    int rc;
    if (start.empty()) {
      rc = c->next(c);  // an unpositioned cursor's next is the first record
    } else {
      c->set_key(c, &k);
      int exact = 0;
      rc = c->search_near(c, &exact);
      if (rc == 0 && exact < 0) rc = c->next(c);
    }
    for (; rc == 0; rc = c->next(c)) {
      check(c->get_key(c, &k), "get_key", t);
      check(c->get_value(c, &v), "get_value", t);
      if (!fn(wt_view(k), wt_view(v))) return;
    }
    if (rc != WT_NOTFOUND) check(rc, "scan", t);
  }

  void after_load() override {
    WtContext& ctx = contexts_.get();
    check(ctx.session->checkpoint(ctx.session, nullptr), "checkpoint", "");
  }
  std::string size_summary() override {
    uint64_t bytes = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      if (e.path().extension() == ".wt") bytes += e.file_size(ec);
    }
    return fmt::format("table files {:.1f} MB after the checkpoint; cache {} MB", bytes / 1048576.0, wt_.cache_mb());
  }

 private:
  std::unique_ptr<WtContext> make_context() {
    auto ctx = std::make_unique<WtContext>();
    WT_CONNECTION* conn = wt_.connection();
    check(conn->open_session(conn, nullptr, engines::kSnapshot, &ctx->session), "open_session", "");
    return ctx;
  }
  WT_CURSOR* cursor(uint32_t t) { return cursor(contexts_.get(), t); }
  WT_CURSOR* cursor(WtContext& ctx, uint32_t t) {
    if (t >= uris_.size()) throw std::logic_error("wiredtiger: no table slot " + std::to_string(t));
    WT_CURSOR*& c = ctx.cursors[t];
    if (c == nullptr) {
      check(ctx.session->open_cursor(ctx.session, uris_[t].c_str(), nullptr, "overwrite=false", &c), "open_cursor", t);
    }
    return c;
  }
  std::string table_name(uint32_t t) const { return t < uris_.size() ? uris_[t] : "?"; }
  void check(int rc, const char* what, uint32_t t) const { check(rc, what, table_name(t)); }
  static void check(int rc, const char* what, const std::string& table) {
    if (rc != 0) engines::wt_check(rc, fmt::format("{}{}", what, table.empty() ? "" : " on " + table));
  }
  // WT_ROLLBACK (a write conflict) is retried up to kMaxRetries, after yielding the CPU to
  // the conflicting writer (which may be descheduled, on a machine with few cores); anything
  // else throws.
  void retry_or_throw(int rc, int attempt, const char* what, uint32_t t) const {
    if (rc == WT_ROLLBACK && attempt < kMaxRetries) {
      std::this_thread::yield();
      return;
    }
    check(rc, what, t);
  }

  engines::WiredTiger wt_;  // declared first: closed after the thread contexts
  std::string dir_;
  std::vector<std::string> uris_;  // by slot; fixed once the tables are created
  ThreadContexts<WtContext> contexts_;
};

}  // namespace

std::unique_ptr<PeerStore> open_wiredtiger_store(const PeerOptions& options) {
  return std::make_unique<WtStore>(options);
}

}  // namespace calico::bench::tpcc::peers
