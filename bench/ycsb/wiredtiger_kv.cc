// The WiredTiger adapter (libwiredtiger, Debian's 3.2.1).
//
// Entry point: open_wiredtiger(config) (registered in kv_store.cc as "wiredtiger").
//
// Configuration (what the papers do, what we set):
//  - Calico's paper runs WiredTiger 10.0.2 with write-ahead logging off and the lowest
//    isolation level; PrediCache's does the same and keeps its default page sizes (2 KB
//    inner, 32 KB leaf). We have Debian's 3.2.1 and set: cache_size = cache_bytes,
//    log=(enabled=false), no periodic checkpoints (WiredTiger only checkpoints when asked:
//    once, at close), sessions with isolation=read-uncommitted, default page sizes.
//  - One table "table:ycsb" with key_format=u, value_format=u (raw bytes; 8-byte big-endian
//    keys sort numerically under WiredTiger's default byte-wise collation).
//  - One session and one cursor per handle (WiredTiger sessions are single-threaded);
//    session_max = threads + 8. Operations are auto-committed single cursor calls.
//  - Load: a bulk cursor on the empty table (keys arrive sorted).
//  - Cache: WiredTiger evicts to stay within cache_size; the OS page cache still holds
//    file pages (WiredTiger does not use O_DIRECT by default); direct_io is not set here.
#include <fmt/format.h>
#include <wiredtiger.h>

#include <stdexcept>

#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(fmt::format("wiredtiger: {}: {}", what, wiredtiger_strerror(rc)));
}

WT_ITEM as_item(std::string_view s) {
  WT_ITEM it{};
  it.data = s.data();
  it.size = s.size();
  return it;
}

constexpr const char* kTable = "table:ycsb";

class WtHandle final : public KvHandle {
 public:
  explicit WtHandle(WT_CONNECTION* conn) {
    check(conn->open_session(conn, nullptr, "isolation=read-uncommitted", &session_), "open_session");
    int rc = session_->open_cursor(session_, kTable, nullptr, nullptr, &cursor_);
    if (rc != 0) session_->close(session_, nullptr);
    check(rc, "open_cursor");
  }
  ~WtHandle() override { session_->close(session_, nullptr); }  // closes the cursor too

  void insert(std::string_view key, std::string_view value) override { put(key, value, "insert"); }
  void update(std::string_view key, std::string_view value) override { put(key, value, "update"); }
  bool read(std::string_view key, std::string* out) override {
    WT_ITEM k = as_item(key), v{};
    cursor_->set_key(cursor_, &k);
    int rc = cursor_->search(cursor_);
    if (rc == 0) {
      rc = cursor_->get_value(cursor_, &v);
      if (rc == 0) out->assign(static_cast<const char*>(v.data), v.size);
    }
    cursor_->reset(cursor_);
    if (rc == WT_NOTFOUND) return false;
    check(rc, "search");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    WT_ITEM k = as_item(start), v{};
    cursor_->set_key(cursor_, &k);
    int exact = 0;
    int rc = cursor_->search_near(cursor_, &exact);
    if (rc == 0 && exact < 0) rc = cursor_->next(cursor_);
    uint64_t n = 0;
    for (; rc == 0 && n < count; rc = cursor_->next(cursor_)) {
      check(cursor_->get_key(cursor_, &k), "get_key");
      check(cursor_->get_value(cursor_, &v), "get_value");
      visit(std::string_view(static_cast<const char*>(k.data), k.size),
            std::string_view(static_cast<const char*>(v.data), v.size));
      ++n;
    }
    cursor_->reset(cursor_);
    if (rc != 0 && rc != WT_NOTFOUND) check(rc, "scan");
    return n;
  }

 private:
  void put(std::string_view key, std::string_view value, const char* what) {
    WT_ITEM k = as_item(key), v = as_item(value);
    cursor_->set_key(cursor_, &k);
    cursor_->set_value(cursor_, &v);
    int rc = cursor_->insert(cursor_);  // overwrite=true (the default): an upsert
    cursor_->reset(cursor_);
    check(rc, what);
  }

  WT_SESSION* session_ = nullptr;
  WT_CURSOR* cursor_ = nullptr;
};

class WtStore final : public KvStore {
 public:
  explicit WtStore(const KvConfig& config) {
    cache_mb_ = std::max<uint64_t>(1, config.cache_bytes >> 20);
    config_ = fmt::format("create,cache_size={}M,log=(enabled=false),session_max={},statistics=(none)",
                          cache_mb_, config.max_threads + 8);
    check(wiredtiger_open(config.data_dir.c_str(), nullptr, config_.c_str(), &conn_), "wiredtiger_open");
    WT_SESSION* s;
    check(conn_->open_session(conn_, nullptr, nullptr, &s), "open_session");
    int rc = s->create(s, kTable, "key_format=u,value_format=u");
    s->close(s, nullptr);
    check(rc, "create");
  }
  ~WtStore() override {
    if (conn_) conn_->close(conn_, nullptr);  // takes the one checkpoint
  }

  std::string name() const override { return "wiredtiger"; }
  std::string configuration() const override {
    return fmt::format("wiredtiger {}.{}.{}: {}, sessions isolation=read-uncommitted, table key_format=u,value_format=u "
                       "(default pages: 32 KB leaf), checkpoint only at close, load = bulk cursor",
                       WIREDTIGER_VERSION_MAJOR, WIREDTIGER_VERSION_MINOR, WIREDTIGER_VERSION_PATCH, config_);
  }
  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    WT_SESSION* s;
    check(conn_->open_session(conn_, nullptr, nullptr, &s), "open_session(load)");
    WT_CURSOR* c;
    int rc = s->open_cursor(s, kTable, nullptr, "bulk", &c);
    std::string key, value;
    for (uint64_t i = 0; rc == 0 && i < n; ++i) {
      make(i, &key, &value);
      WT_ITEM k = as_item(key), v = as_item(value);
      c->set_key(c, &k);
      c->set_value(c, &v);
      rc = c->insert(c);
      if ((i + 1) % 100000 == 0 || i + 1 == n) progress(i + 1);
    }
    if (rc == 0) rc = c->close(c);
    s->close(s, nullptr);
    check(rc, "bulk load");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<WtHandle>(conn_); }

 private:
  WT_CONNECTION* conn_ = nullptr;
  uint64_t cache_mb_ = 0;
  std::string config_;
};

}  // namespace

std::unique_ptr<KvStore> open_wiredtiger(const KvConfig& config) { return std::make_unique<WtStore>(config); }

}  // namespace calico::bench::kv
