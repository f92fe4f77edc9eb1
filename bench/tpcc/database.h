// Database<TableT>: the TPC-C schema on one backend: the nine tables and the two secondary
// indexes. TableT is the table backend (the interface: typed_rows.h): Calico's Table<Pool>
// (each table a B+tree in its own space "tpcc_<table>", on one pool) or a peer's PeerTable
// (peers/peer_table.h: one WiredTiger table or LMDB database per TPC-C table).
//
// Entry points: Database<TableT>::create(backend, scale) (fresh tables), tables(), the
// members; CalicoDatabase<Pool> = Database<Table<Pool>>.
//
// Keys (keys.h) and values (rows.h):
//   warehouse    (w)              -> WarehouseRow
//   district     (w, d)           -> DistrictRow
//   customer     (w, d, c)        -> CustomerRow
//   history      (origin, seq)    -> HistoryRow
//   new_order    (w, d, o)        -> empty
//   order        (w, d, o)        -> OrderRow
//   order_line   (w, d, o, n)     -> OrderLineRow
//   item         (i)              -> ItemRow
//   stock        (w, i)           -> StockRow
//   customer_name (w, d, last, first, c) -> customer key + RecordHint (table.h)
//   order_customer (w, d, c, o)   -> order key + RecordHint
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "scale.h"
#include "table.h"

namespace calico::bench::tpcc {

template <class TableT>
struct Database {
  using TableType = TableT;
  using Backend = typename TableT::Backend;
  Backend* backend;  // the pool (Calico) or the engine (a peer): stats(), page_size()
  Scale scale;
  TableT warehouse, district, customer, history, new_order, order, order_line, item, stock;
  TableT customer_name, order_customer;
  // History origins handed out to workloads (keys.h, key_history): 0 is the loader's.
  std::unique_ptr<std::atomic<uint32_t>> history_origins = std::make_unique<std::atomic<uint32_t>>(0);

  // A history origin no other workload of this database uses.
  uint32_t new_history_origin() { return history_origins->fetch_add(1) + 1; }

  // Creates the eleven empty tables. Errors: the backend's (a name in use).
  static Database create(Backend& backend, const Scale& scale) {
    uint32_t id = 0;
    auto t = [&](const char* name) { return TableT::create(backend, name, id++); };
    return Database{&backend,       scale,          t("warehouse"), t("district"), t("customer"),
                    t("history"),   t("new_order"), t("order"),     t("order_line"), t("item"),
                    t("stock"),     t("customer_name"), t("order_customer")};
  }

  std::array<TableT*, 11> tables() {
    return {&warehouse, &district, &customer, &history, &new_order, &order, &order_line, &item, &stock,
            &customer_name, &order_customer};
  }
  // Index skipping on every table (table.h). Between runs only.
  void set_index_skipping(bool on) {
    for (TableT* t : tables()) t->set_index_skipping(on);
  }
};

template <class Pool>
using CalicoDatabase = Database<Table<Pool>>;

}  // namespace calico::bench::tpcc
