// Database<Pool>: the TPC-C schema on one pool: the nine tables and the two secondary
// indexes, each a B+tree in its own space (named "tpcc_<table>").
//
// Entry points: Database<Pool>::create(pool, scale) (fresh spaces), tables(), the members.
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

template <class Pool>
struct Database {
  using Tree = index::BasicBTree<Pool>;
  Pool* pool;
  Scale scale;
  Table<Pool> warehouse, district, customer, history, new_order, order, order_line, item, stock;
  Table<Pool> customer_name, order_customer;
  // History origins handed out to workloads (keys.h, key_history): 0 is the loader's.
  std::unique_ptr<std::atomic<uint32_t>> history_origins = std::make_unique<std::atomic<uint32_t>>(0);

  // A history origin no other workload of this database uses.
  uint32_t new_history_origin() { return history_origins->fetch_add(1) + 1; }

  // Creates the eleven spaces and empty trees. Errors: the pool's (a space name in use).
  static Database create(Pool& pool, const Scale& scale) {
    uint32_t id = 0;
    auto t = [&](const char* name) {
      return Table<Pool>(Tree::create(pool, std::string("tpcc_") + name), name, id++);
    };
    return Database{&pool,          scale,          t("warehouse"), t("district"), t("customer"),
                    t("history"),   t("new_order"), t("order"),     t("order_line"), t("item"),
                    t("stock"),     t("customer_name"), t("order_customer")};
  }

  std::array<Table<Pool>*, 11> tables() {
    return {&warehouse, &district, &customer, &history, &new_order, &order, &order_line, &item, &stock,
            &customer_name, &order_customer};
  }
  // Index skipping on every table (table.h). Between runs only.
  void set_index_skipping(bool on) {
    for (Table<Pool>* t : tables()) t->set_index_skipping(on);
  }
};

}  // namespace calico::bench::tpcc
