// TypedRows<Derived>: the typed forms of a TPC-C table's byte-level calls, shared by every
// table backend (Calico's Table<Pool>, table.h; the peers' PeerTable, peers/peer_table.h).
//
// Entry points (members of every table): read<Row>, update<Row>(fn), insert, insert_row,
// remove. CRTP, so the Calico path makes no virtual call: each call inlines into Derived's
// read_value / update_value / insert_value / remove_value.
//
// The table interface the workload, the loader and the consistency checks use (what a
// backend implements; "hint" is a RecordHint*, table.h):
//   using Backend;  static Derived create(Backend&, std::string name, uint32_t id)
//   static constexpr bool kHasHints  (reads and updates take and report RecordHints)
//   name(), id(), size(), set_index_skipping(bool), index_skipping()
//   read_value(key, hint, std::string* out) -> bool        (false: absent)
//   update_value(key, hint, fn(std::span<std::byte>)) -> bool  (atomic read-modify-write
//       of one record; fn runs exactly once when the record exists, must not call into
//       any table, and must not change the length)
//   insert_value(key, value, hint) -> bool                  (false: key exists, nothing changed)
//   remove_value(key, hint) -> bool                         (false: absent; exactly one of
//       concurrent removers of a key gets true)
//   scan(start, fn(key, value) -> bool)                     (keys >= start in order until
//       fn returns false; the views live during the call; fn must not call into any table)
//   store_secondary_hint(sec_key, hint) -> bool
// Backend (Database::backend): stats() -> PoolStats, page_size().
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "calico/index/record_hint.h"
#include "rows.h"

namespace calico::bench::tpcc {

using index::RecordHint;

// A record whose stored length is not its table's row size: our own invariant, but the
// bytes come from pages (or a peer engine's files), so it is reported as an error naming the
// table, not an abort.
class RowSizeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class Derived>
class TypedRows {
 public:
  // Typed forms of read_value and update_value.
  template <class Row>
  bool read(std::string_view key, RecordHint* hint, Row* out) {
    std::string v;
    if (!self().read_value(key, hint, &v)) return false;
    if (!row_from(std::string_view(v), out)) size_error(v.size(), sizeof(Row));
    return true;
  }
  // fn(Row&) runs on a copy of the row inside the record's atomic update; the copy is
  // written back.
  template <class Row, class Fn>
  bool update(std::string_view key, RecordHint* hint, Fn&& fn) {
    size_t bad = 0;
    bool found = self().update_value(key, hint, [&](std::span<std::byte> v) {
      Row r;
      if (!row_from(std::span<const std::byte>(v), &r)) {
        bad = v.size();
        return;
      }
      fn(r);
      std::memcpy(v.data(), &r, sizeof r);
    });
    if (bad != 0) size_error(bad, sizeof(Row));
    return found;
  }

  bool insert(std::string_view key, std::string_view value) { return self().insert_value(key, value, nullptr); }
  template <class Row>
  bool insert_row(std::string_view key, const Row& row, RecordHint* hint = nullptr) {
    return self().insert_value(key, row_bytes(row), hint);
  }
  bool remove(std::string_view key, RecordHint* hint = nullptr) { return self().remove_value(key, hint); }

 protected:
  TypedRows() = default;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  [[noreturn]] void size_error(size_t got, size_t want) const {
    throw RowSizeError("table " + static_cast<const Derived&>(*this).name() + ": a record of " +
                       std::to_string(got) + " bytes, expected " + std::to_string(want));
  }
};

}  // namespace calico::bench::tpcc
