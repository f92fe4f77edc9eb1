// WiredTiger: see wiredtiger.h.
#include "engines/wiredtiger.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace calico::bench::engines {

void wt_check(int rc, std::string_view what) {
  if (rc != 0) throw std::runtime_error(fmt::format("wiredtiger: {}: {}", what, wiredtiger_strerror(rc)));
}

WiredTiger::WiredTiger(const WiredTigerOptions& o) {
  cache_mb_ = std::max<uint64_t>(1, o.cache_bytes >> 20);
  config_ = fmt::format("create,cache_size={}M,log=(enabled=false),session_max={},statistics=(none)", cache_mb_,
                        o.session_max);
  wt_check(wiredtiger_open(o.dir.c_str(), nullptr, config_.c_str(), &conn_), "wiredtiger_open");
}

WiredTiger::~WiredTiger() {
  if (conn_) conn_->close(conn_, nullptr);  // takes the one checkpoint of a close
}

void WiredTiger::create_table(const std::string& uri, std::string_view context) const {
  WT_SESSION* s;
  wt_check(conn_->open_session(conn_, nullptr, nullptr, &s), fmt::format("open_session{}", context));
  const int rc = s->create(s, uri.c_str(), kRawTable);
  s->close(s, nullptr);
  wt_check(rc, fmt::format("create{}", context));
}

std::string WiredTiger::describe() const {
  return fmt::format("wiredtiger {}.{}.{}: {}", WIREDTIGER_VERSION_MAJOR, WIREDTIGER_VERSION_MINOR,
                     WIREDTIGER_VERSION_PATCH, config_);
}

}  // namespace calico::bench::engines
