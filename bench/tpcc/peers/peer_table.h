// PeerTable: one TPC-C table or secondary index in a peer engine (PeerStore, peer_store.h),
// the table backend of Database<PeerTable> (database.h) for `calico_bench tpcc` on
// WiredTiger and LMDB. It implements the table interface of typed_rows.h with the same
// contracts as Calico's Table<Pool> (table.h), except index skipping:
//  - hints: a peer has no leaf positions to hint at. read_value / update_value /
//    insert_value / remove_value leave *hint as it was (Calico's path with skipping off does
//    the same for reads and updates), so the secondary index entries keep the zero hints
//    the loader wrote, and read_through never repairs one.
//  - set_index_skipping(true) is refused (std::invalid_argument); the command line refuses
//    `--index-skipping on` with a peer before anything is created.
//  - size() counts the records with a scan: O(rows), for tests and reports only.
// Isolation: peer_store.h (each operation atomic on its own, as Calico's).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "tpcc/peers/peer_store.h"
#include "tpcc/table.h"
#include "tpcc/typed_rows.h"

namespace calico::bench::tpcc {

class PeerTable : public TypedRows<PeerTable> {
 public:
  using Backend = peers::PeerStore;

  // Creates the engine's table "tpcc_<name>". id: unique in the database (< kMaxTables).
  static PeerTable create(peers::PeerStore& store, std::string name, uint32_t id) {
    if (id >= kMaxTables) throw std::logic_error("tpcc: table id past kMaxTables");
    const uint32_t slot = store.create_table(name);
    return PeerTable(&store, slot, std::move(name), id);
  }

  // No record hints: reads leave them as they are (table.h's kHasHints).
  static constexpr bool kHasHints = false;

  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  // Index skipping is Calico's (record hints into B+tree leaves). Errors: on = true.
  void set_index_skipping(bool on) {
    if (on) {
      throw std::invalid_argument("index skipping is Calico's (record hints into its B+tree leaves); " +
                                  store_->name() + " has no hinted access (table " + name_ + ")");
    }
  }
  bool index_skipping() const { return false; }
  uint64_t size() const {
    uint64_t n = 0;
    store_->scan(slot_, "", [&](std::string_view, std::string_view) { return ++n, true; });
    return n;
  }

  bool read_value(std::string_view key, RecordHint* hint, std::string* out) {
    (void)hint;
    return store_->read(slot_, key, out);
  }
  template <class Fn>
  bool update_value(std::string_view key, RecordHint* hint, Fn&& fn) {
    (void)hint;
    return store_->update(slot_, key, fn);
  }
  bool insert_value(std::string_view key, std::string_view value, RecordHint* hint) {
    (void)hint;
    return store_->insert(slot_, key, value);
  }
  bool remove_value(std::string_view key, RecordHint* hint) {
    (void)hint;
    return store_->remove(slot_, key);
  }
  // Rewrites the hint bytes of the entry at sec_key (one atomic update); false when absent.
  bool store_secondary_hint(std::string_view sec_key, const RecordHint& hint) {
    return store_->update(slot_, sec_key, [&](std::span<std::byte> v) {
      if (v.size() > kHintBytes) hint.encode(v.data() + v.size() - kHintBytes);
    });
  }
  template <class Fn>
  void scan(std::string_view start, Fn&& fn) {
    store_->scan(slot_, start, fn);
  }

 private:
  PeerTable(peers::PeerStore* store, uint32_t slot, std::string name, uint32_t id)
      : store_(store), slot_(slot), name_(std::move(name)), id_(id) {}

  peers::PeerStore* store_;
  uint32_t slot_;
  std::string name_;
  uint32_t id_;
};

}  // namespace calico::bench::tpcc
