// Table<Pool>: one TPC-C table or secondary index, a B+tree in its own space, behind the
// accessor through which every access to a primary record by key goes. Calico's table
// backend; the peers' is peers/peer_table.h, and both implement the interface stated in
// typed_rows.h (templates, no virtual call here).
//
// Entry points: RecordHint, SecondaryValue (the value format of the secondary indexes),
// Table<Pool>::create(pool, name, id), read / update (primary records by key, with a hint),
// insert / remove / scan (the typed forms come from TypedRows, typed_rows.h).
//
// Index skipping ([LIPAH] sections 4-5) lives here, and only here: read_value,
// update_value, insert_value and remove_value take a RecordHint*, a guess of where the
// record lives ({block, slot}; all zero = no hint). With skipping on (set_index_skipping),
// reads and updates go to the hinted leaf (BasicBTree::lookup_hinted / update_hinted: the
// leaf is validated, a mismatch falls back to the descent) and write the record's real
// position into *hint (so that the caller's next access to the same record, and the
// secondary index entry it came from, can carry it); off, they descend from the root and
// leave *hint as it was. Inserts report the new record's position either way. Callers keep
// the hint of every record they read inside a transaction (its read/write set) and pass
// the same RecordHint* to the later update of that record; inserts of records that a
// secondary index names pass a RecordHint whose value then goes into the index entry; a
// read through an index entry whose hint came back changed rewrites the entry's hint
// (store_secondary_hint). The secondary indexes store, after the primary key, the 8 bytes
// of a RecordHint (RecordHint::encode).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "calico/index/btree.h"
#include "rows.h"
#include "typed_rows.h"

namespace calico::bench::tpcc {

// Where a primary record was last seen: leaf block and slot (calico/index/record_hint.h). All zero:
// no hint. (RecordHint: typed_rows.h.)
inline constexpr size_t kHintBytes = RecordHint::kBytes;

// Per-thread hint statistics of every table, indexed by Table::id() (plain counters: only
// the owning thread writes them; the run driver reads a worker's after it stopped).
inline constexpr size_t kMaxTables = 16;
using TableHintStats = std::array<index::HintStats, kMaxTables>;
inline thread_local TableHintStats tls_hint_stats;

// A secondary index value: the primary key, then a RecordHint of the primary record.
struct SecondaryValue {
  std::string_view primary_key;
  RecordHint hint;
};
inline std::string encode_secondary(std::string_view primary_key, RecordHint hint = {}) {
  std::string v(primary_key);
  v.resize(primary_key.size() + kHintBytes);
  hint.encode(v.data() + primary_key.size());
  return v;
}
// False when v is too short to hold a hint (a corrupt or foreign value).
inline bool decode_secondary(std::string_view v, SecondaryValue* out) {
  if (v.size() <= kHintBytes) return false;
  out->primary_key = v.substr(0, v.size() - kHintBytes);
  out->hint = RecordHint::decode(v.data() + out->primary_key.size());
  return true;
}

template <class Pool>
class Table : public TypedRows<Table<Pool>> {
 public:
  using Tree = index::BasicBTree<Pool>;
  using Backend = Pool;
  // Reads and updates take and report RecordHints (index skipping).
  static constexpr bool kHasHints = true;
  // id: this table's slot in tls_hint_stats (< kMaxTables), unique in its database.
  Table(Tree tree, std::string name, uint32_t id) : tree_(std::move(tree)), name_(std::move(name)), id_(id) {
    if (id >= kMaxTables) throw std::logic_error("tpcc: table id past kMaxTables");
  }
  // A fresh B+tree in a new space "tpcc_<name>". Errors: the pool's (a space name in use).
  static Table create(Pool& pool, std::string name, uint32_t id) {
    Tree tree = Tree::create(pool, "tpcc_" + name);
    return Table(std::move(tree), std::move(name), id);
  }

  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  // Set between runs only (no worker running).
  void set_index_skipping(bool on) { skipping_ = on; }
  bool index_skipping() const { return skipping_; }
  Tree& tree() { return tree_; }
  const Tree& tree() const { return tree_; }
  uint64_t size() const { return tree_.size(); }

  // --- Primary records by key: the calls index skipping replaces (and nothing else). --------
  // Copies key's value into *out; false when absent. hint: in, a guess (ignored for now);
  // out, unchanged (a hinted implementation stores where it found the record). Not null.
  bool read_value(std::string_view key, RecordHint* hint, std::string* out) {
    if (skipping_) return tree_.lookup_hinted(key, hint, out, &tls_hint_stats[id_]);
    return tree_.lookup(key, out);
  }
  // Calls fn(std::span<std::byte>) on key's value in place under its leaf's exclusive latch
  // (BasicBTree::update: atomic against every other writer of the record; the length is
  // fixed; fn must not call into any table). False when absent. hint: as read_value.
  template <class Fn>
  bool update_value(std::string_view key, RecordHint* hint, Fn&& fn) {
    if (skipping_) return tree_.update_hinted(key, hint, std::forward<Fn>(fn), &tls_hint_stats[id_]);
    return tree_.update(key, std::forward<Fn>(fn));
  }
  // Inserts key -> value; false (nothing changed) when key exists. hint: out, where the
  // record was put; may be null.
  bool insert_value(std::string_view key, std::string_view value, RecordHint* hint) {
    return tree_.insert(key, value, hint);
  }
  // Removes key; false when absent (exactly one of several concurrent removers of a key
  // gets true: Delivery's claim). hint: unused (a remove latches the leaf through the
  // descent; the tree has no hinted remove); may be null.
  bool remove_value(std::string_view key, RecordHint* hint) {
    (void)hint;
    return tree_.remove(key);
  }
  // -----------------------------------------------------------------------------------------

  // Secondary indexes: rewrites the hint of the entry at sec_key (its last kHintBytes), in
  // place under the leaf latch; false when the entry is absent. For callers whose read of
  // the primary record through the entry's hint came back with a different hint (a repair).
  bool store_secondary_hint(std::string_view sec_key, const RecordHint& hint) {
    return tree_.update(sec_key, [&](std::span<std::byte> v) {
      if (v.size() > kHintBytes) hint.encode(v.data() + v.size() - kHintBytes);
    });
  }

  // fn(key, value) for keys >= start in order until fn returns false (BasicBTree::scan).
  template <class Fn>
  void scan(std::string_view start, Fn&& fn) {
    tree_.scan(start, std::forward<Fn>(fn));
  }

 private:
  Tree tree_;
  std::string name_;
  uint32_t id_;
  bool skipping_ = false;
};

}  // namespace calico::bench::tpcc
