// The WiredTiger adapter of the YCSB driver: open_wiredtiger(config) (registered in
// kv_store.cc as "wiredtiger"). The engine is opened and configured in engines/wiredtiger.h.
//
// What this adapter adds:
//  - One table "table:ycsb" (raw byte keys and values, engines::kRawTable).
//  - One session and one cursor per handle (WiredTiger sessions are single-threaded),
//    sessions at isolation=read-uncommitted (the paper's lowest level); session_max =
//    threads + 8. Operations are auto-committed single cursor calls.
//  - Load: a bulk cursor on the empty table (keys arrive sorted).
#include <fmt/format.h>
#include <wiredtiger.h>

#include <stdexcept>

#include "engines/wiredtiger.h"
#include "ycsb/kv_store.h"

namespace calico::bench::kv {
namespace {

using engines::wt_check;
using engines::wt_item;

constexpr const char* kTable = "table:ycsb";

class WtHandle final : public KvHandle {
 public:
  explicit WtHandle(WT_CONNECTION* conn) {
    wt_check(conn->open_session(conn, nullptr, engines::kReadUncommitted, &session_), "open_session");
    int rc = session_->open_cursor(session_, kTable, nullptr, nullptr, &cursor_);
    if (rc != 0) session_->close(session_, nullptr);
    wt_check(rc, "open_cursor");
  }
  ~WtHandle() override { session_->close(session_, nullptr); }  // closes the cursor too

  void insert(std::string_view key, std::string_view value) override { put(key, value, "insert"); }
  void update(std::string_view key, std::string_view value) override { put(key, value, "update"); }
  bool read(std::string_view key, std::string* out) override {
    WT_ITEM k = wt_item(key), v{};
    cursor_->set_key(cursor_, &k);
    int rc = cursor_->search(cursor_);
    if (rc == 0) {
      rc = cursor_->get_value(cursor_, &v);
      if (rc == 0) out->assign(static_cast<const char*>(v.data), v.size);
    }
    cursor_->reset(cursor_);
    if (rc == WT_NOTFOUND) return false;
    wt_check(rc, "search");
    return true;
  }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    WT_ITEM k = wt_item(start), v{};
    cursor_->set_key(cursor_, &k);
    int exact = 0;
    int rc = cursor_->search_near(cursor_, &exact);
    if (rc == 0 && exact < 0) rc = cursor_->next(cursor_);
    uint64_t n = 0;
    for (; rc == 0 && n < count; rc = cursor_->next(cursor_)) {
      wt_check(cursor_->get_key(cursor_, &k), "get_key");
      wt_check(cursor_->get_value(cursor_, &v), "get_value");
      visit(std::string_view(static_cast<const char*>(k.data), k.size),
            std::string_view(static_cast<const char*>(v.data), v.size));
      ++n;
    }
    cursor_->reset(cursor_);
    if (rc != 0 && rc != WT_NOTFOUND) wt_check(rc, "scan");
    return n;
  }

 private:
  void put(std::string_view key, std::string_view value, const char* what) {
    WT_ITEM k = wt_item(key), v = wt_item(value);
    cursor_->set_key(cursor_, &k);
    cursor_->set_value(cursor_, &v);
    int rc = cursor_->insert(cursor_);  // overwrite=true (the default): an upsert
    cursor_->reset(cursor_);
    wt_check(rc, what);
  }

  WT_SESSION* session_ = nullptr;
  WT_CURSOR* cursor_ = nullptr;
};

class WtStore final : public KvStore {
 public:
  explicit WtStore(const KvConfig& config)
      : wt_({.dir = config.data_dir, .cache_bytes = config.cache_bytes, .session_max = config.max_threads + 8}) {
    wt_.create_table(kTable);
  }

  std::string name() const override { return "wiredtiger"; }
  std::string configuration() const override {
    return fmt::format("{}, sessions isolation=read-uncommitted, table key_format=u,value_format=u "
                       "(default pages: 32 KB leaf), checkpoint only at close, load = bulk cursor",
                       wt_.describe());
  }
  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    WT_SESSION* s;
    WT_CONNECTION* conn = wt_.connection();
    wt_check(conn->open_session(conn, nullptr, nullptr, &s), "open_session(load)");
    WT_CURSOR* c;
    int rc = s->open_cursor(s, kTable, nullptr, "bulk", &c);
    std::string key, value;
    for (uint64_t i = 0; rc == 0 && i < n; ++i) {
      make(i, &key, &value);
      WT_ITEM k = wt_item(key), v = wt_item(value);
      c->set_key(c, &k);
      c->set_value(c, &v);
      rc = c->insert(c);
      if ((i + 1) % 100000 == 0 || i + 1 == n) progress(i + 1);
    }
    if (rc == 0) rc = c->close(c);
    s->close(s, nullptr);
    wt_check(rc, "bulk load");
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<WtHandle>(wt_.connection()); }

 private:
  engines::WiredTiger wt_;
};

}  // namespace

std::unique_ptr<KvStore> open_wiredtiger(const KvConfig& config) { return std::make_unique<WtStore>(config); }

}  // namespace calico::bench::kv
