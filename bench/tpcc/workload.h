// TpccWorkload<TableT>: the five TPC-C transactions (clause 2.4-2.8) over Database<TableT>,
// written once against index::BasicBTree<Pool>, so that they run on every translation.
//
// Entry points: TpccWorkload(db, seed); run_one(home_w) (draws a type by the mix
// and its inputs, runs it); new_order / payment / order_status / delivery / stock_level
// with explicit inputs (tests); counters().
//
// ISOLATION: per-record atomicity only, as vmcache's TPC-C driver. Every read-modify-write
// of one record (W_YTD, D_YTD, D_NEXT_O_ID, C_BALANCE, S_QUANTITY, O_CARRIER_ID, ...) is
// one Table::update_value: on Calico a BasicBTree::update under the record's leaf latch (on
// a peer one engine transaction, peers/peer_table.h), so concurrent transactions never
// lose an update; each single-record read sees a committed record value. There is NO
// multi-record isolation (a transaction may see another one half done), NO rollback (a
// transaction that fails midway leaves its earlier writes; the only "rollback" is New-Order's
// invalid item, which is detected before any write), and NO WAL or durability.
// What still holds under concurrency:
//  - New-Order takes its o_id with one update that reads and increments D_NEXT_O_ID, and
//    inserts the order, its lines and its order_customer entry before its new-order row, so
//    a Delivery that finds the new-order row finds a complete order.
//  - Delivery claims the oldest new-order row of a district with remove(), which returns
//    true for exactly one thread; a loser rescans (kDeliveryClaimTries) or skips the district.
//  - Warehouse w's home terminal is thread w mod threads (driver.h), so the transactions of
//    one district's order sequence run on one thread; other threads touch the warehouse only
//    through remote stock updates (New-Order) and remote customer updates (Payment), which
//    are single-record updates. The clause 3.3.2 conditions then hold whenever no
//    transaction is running (consistency.h checks them after every run).
//
// Index skipping hook: every access to a primary record by key goes through Table::read /
// Table::update with a RecordHint* (table.h). A record read inside a transaction keeps its
// hint in a local RecordHint, and its later update passes the same one (the read/write set);
// records found through a secondary index start with the hint stored in the index entry.
// With remember_hints, records accessed by id (warehouse, district, customer, item, stock)
// start with the hint this terminal saw last time (hint_memory.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "database.h"
#include "hint_memory.h"
#include "keys.h"
#include "loader.h"
#include "random.h"

namespace calico::bench::tpcc {

enum class TxType : uint8_t { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };
inline constexpr size_t kTxTypes = 5;
inline constexpr std::array<const char*, kTxTypes> kTxNames = {"new_order", "payment", "order_status", "delivery",
                                                               "stock_level"};
// The mix (clause 5.2.3), in percent: New-Order 45, Payment 43, the others 4 each.
inline constexpr std::array<uint32_t, kTxTypes> kTxMixPercent = {45, 43, 4, 4, 4};

// Bounds (STYLE.md 12): a Delivery whose claim of a district's oldest new-order row loses to
// another thread rescans at most this often, then skips the district (clause 2.7.4.2 allows
// skipping); Stock-Level examines the last 20 orders.
inline constexpr int kDeliveryClaimTries = 16;
inline constexpr uint32_t kStockLevelOrders = 20;

struct NewOrderLine {
  uint32_t i_id, supply_w_id, quantity;
};
struct NewOrderInput {
  uint32_t w, d, c;
  std::vector<NewOrderLine> lines;  // 5..15
};
struct PaymentInput {
  uint32_t w, d, c_w, c_d;
  bool by_name;
  uint32_t c;             // by id
  std::string last;       // by name
  int64_t amount_cents;
};
struct OrderStatusInput {
  uint32_t w, d;
  bool by_name;
  uint32_t c;
  std::string last;
};
struct OrderStatusResult {
  bool found = false;
  uint32_t c = 0, o = 0, carrier_id = 0;
  int64_t balance_cents = 0;
  uint32_t lines = 0;
};

// Events counted per worker; `failures` are self-check failures (a row the schema
// guarantees but that is missing): any makes the run fail.
struct TxCounters {
  std::array<uint64_t, kTxTypes> done{};
  uint64_t new_order_rollbacks = 0;   // the 1% invalid-item New-Orders (counted in done too)
  uint64_t remote_order_lines = 0;
  uint64_t remote_payments = 0;
  uint64_t by_name = 0;                // Payment and Order-Status by last name
  uint64_t delivery_claims_lost = 0;   // remove() returned false: another thread claimed it
  uint64_t delivery_skipped = 0;       // districts with no new-order row (or lost every claim)
  uint64_t failures = 0;
  std::string first_failure;
};

template <class TableT>
class TpccWorkload {
 public:
  // History rows get keys (origin, 1..), the origin unique to this object (Database).
  // remember_hints: keep the hints of the records this terminal touched across its
  // transactions (hint_memory.h); meaningful with index skipping on.
  TpccWorkload(Database<TableT>& db, uint64_t seed, bool remember_hints = false)
      : db_(db), sc_(db.scale), origin_(db.new_history_origin()), rng_(seed), hints_(db.scale, remember_hints) {}

  const TxCounters& counters() const { return counters_; }

  // Draws a transaction type by the mix and its inputs for home warehouse w, runs it.
  TxType run_one(uint32_t w) {
    uint32_t r = rng_.uniform(1, 100);
    size_t t = 0;
    for (uint32_t acc = kTxMixPercent[0]; r > acc; acc += kTxMixPercent[++t]) {
    }
    TxType type = static_cast<TxType>(t);
    switch (type) {
      case TxType::kNewOrder: new_order(random_new_order(w)); break;
      case TxType::kPayment: payment(random_payment(w)); break;
      case TxType::kOrderStatus: order_status(random_order_status(w)); break;
      case TxType::kDelivery: delivery(w, rng_.uniform(1, 10)); break;
      case TxType::kStockLevel: stock_level(w, rng_.uniform(1, kDistricts), rng_.uniform(10, 20)); break;
    }
    return type;
  }

  // --- Inputs (clause 2.4.1, 2.5.1, 2.6.1) ---------------------------------------------
  NewOrderInput random_new_order(uint32_t w) {
    NewOrderInput in{w, rng_.uniform(1, kDistricts), customer_id(), {}};
    const uint32_t n = rng_.uniform(kMinOrderLines, kMaxOrderLines);
    const bool rollback = rng_.uniform(1, 100) == 1;  // 1%: the last item is unused
    for (uint32_t i = 1; i <= n; ++i) {
      NewOrderLine l;
      l.i_id = rollback && i == n ? sc_.items + 1 : rng_.nurand(kOlIIdA, 1, sc_.items, kOlIIdC);
      l.supply_w_id = w;
      if (sc_.warehouses > 1 && rng_.uniform(1, 100) == 1) l.supply_w_id = rng_.uniform_except(1, sc_.warehouses, w);
      l.quantity = rng_.uniform(1, 10);
      in.lines.push_back(l);
    }
    return in;
  }
  PaymentInput random_payment(uint32_t w) {
    PaymentInput in;
    in.w = w;
    in.d = rng_.uniform(1, kDistricts);
    if (sc_.warehouses > 1 && rng_.uniform(1, 100) <= 15) {  // 15% remote
      in.c_w = rng_.uniform_except(1, sc_.warehouses, w);
      in.c_d = rng_.uniform(1, kDistricts);
    } else {
      in.c_w = w;
      in.c_d = in.d;
    }
    in.by_name = rng_.uniform(1, 100) <= 60;
    in.c = in.by_name ? 0 : customer_id();
    if (in.by_name) in.last = run_last_name();
    in.amount_cents = rng_.uniform(100, 500000);
    return in;
  }
  OrderStatusInput random_order_status(uint32_t w) {
    OrderStatusInput in{w, rng_.uniform(1, kDistricts), rng_.uniform(1, 100) <= 60, 0, {}};
    if (in.by_name) {
      in.last = run_last_name();
    } else {
      in.c = customer_id();
    }
    return in;
  }

  // --- New-Order (clause 2.4.2) ---------------------------------------------------------
  // Returns false when it "rolled back": an item id is unused. Items are validated before
  // anything is written, so a rollback writes nothing.
  bool new_order(const NewOrderInput& in) {
    counters_.done[size_t(TxType::kNewOrder)]++;
    std::array<ItemRow, kMaxOrderLines> items;
    CALICO_CHECK(!in.lines.empty() && in.lines.size() <= kMaxOrderLines);
    for (size_t i = 0; i < in.lines.size(); ++i) {
      Remembered h = hints_.item(in.lines[i].i_id);
      if (!db_.item.read(key_item(in.lines[i].i_id), &h.hint, &items[i])) {
        counters_.new_order_rollbacks++;
        return false;
      }
    }
    WarehouseRow wr;
    Remembered wh = hints_.warehouse(in.w);
    if (!db_.warehouse.read(key_warehouse(in.w), &wh.hint, &wr)) return fail("warehouse", in.w, 0);
    CustomerRow cr;
    Remembered ch = hints_.customer(in.w, in.d, in.c);
    if (!db_.customer.read(key_customer(in.w, in.d, in.c), &ch.hint, &cr)) return fail("customer", in.w, in.d);
    uint32_t o = 0;
    int32_t d_tax = 0;
    Remembered dh = hints_.district(in.w, in.d);
    if (!db_.district.template update<DistrictRow>(key_district(in.w, in.d), &dh.hint, [&](DistrictRow& r) {
          d_tax = r.tax_bp;
          o = r.next_o_id++;
        })) {
      return fail("district", in.w, in.d);
    }
    bool all_local = true;
    for (const NewOrderLine& l : in.lines) all_local = all_local && l.supply_w_id == in.w;
    const uint64_t date = now_date();
    OrderRow orow{date, in.c, 0, static_cast<uint32_t>(in.lines.size()), all_local ? 1u : 0u};
    const std::string okey = key_order(in.w, in.d, o);
    RecordHint oh;
    if (!db_.order.insert_row(okey, orow, &oh)) return fail("order (duplicate o_id)", in.w, in.d);
    int64_t total = 0;
    for (size_t i = 0; i < in.lines.size(); ++i) {
      const NewOrderLine& l = in.lines[i];
      char dist_info[24];
      Remembered sh = hints_.stock(l.supply_w_id, l.i_id);
      const bool remote = l.supply_w_id != in.w;
      counters_.remote_order_lines += remote;
      if (!db_.stock.template update<StockRow>(key_stock(l.supply_w_id, l.i_id), &sh.hint, [&](StockRow& s) {
            s.quantity = s.quantity >= static_cast<int32_t>(l.quantity) + 10 ? s.quantity - static_cast<int32_t>(l.quantity)
                                                                             : s.quantity - static_cast<int32_t>(l.quantity) + 91;
            s.ytd += l.quantity;
            s.order_cnt++;
            s.remote_cnt += remote;
            std::memcpy(dist_info, s.dist[in.d - 1], sizeof dist_info);
          })) {
        return fail("stock", l.supply_w_id, 0);
      }
      OrderLineRow ol{};
      ol.i_id = l.i_id;
      ol.supply_w_id = l.supply_w_id;
      ol.quantity = l.quantity;
      ol.amount_cents = items[i].price_cents * l.quantity;
      std::memcpy(ol.dist_info, dist_info, sizeof dist_info);
      total += ol.amount_cents;
      if (!db_.order_line.insert_row(key_order_line(in.w, in.d, o, static_cast<uint32_t>(i + 1)), ol)) {
        return fail("order line (duplicate)", in.w, in.d);
      }
    }
    // The total the terminal would display: sum x (1 - discount) x (1 + w_tax + d_tax).
    total_display_ = total * (10000 - cr.discount_bp) / 10000 * (10000 + wr.tax_bp + d_tax) / 10000;
    db_.order_customer.insert(key_order_customer(in.w, in.d, in.c, o), encode_secondary(okey, oh));
    db_.new_order.insert(key_new_order(in.w, in.d, o), "");
    return true;
  }

  // --- Payment (clause 2.5.2) -----------------------------------------------------------
  void payment(const PaymentInput& in) {
    counters_.done[size_t(TxType::kPayment)]++;
    counters_.remote_payments += in.c_w != in.w;
    counters_.by_name += in.by_name;
    char w_name[10], d_name[10];
    Remembered wh = hints_.warehouse(in.w), dh = hints_.district(in.w, in.d);
    if (!db_.warehouse.template update<WarehouseRow>(key_warehouse(in.w), &wh.hint, [&](WarehouseRow& r) {
          r.ytd_cents += in.amount_cents;
          std::memcpy(w_name, r.name, sizeof w_name);
        })) {
      fail("warehouse", in.w, 0);
      return;
    }
    if (!db_.district.template update<DistrictRow>(key_district(in.w, in.d), &dh.hint, [&](DistrictRow& r) {
          r.ytd_cents += in.amount_cents;
          std::memcpy(d_name, r.name, sizeof d_name);
        })) {
      fail("district", in.w, in.d);
      return;
    }
    uint32_t c = in.c;
    // By name: the hint comes from the name index entry; by id: from this terminal's memory.
    Remembered cm = in.by_name ? Remembered(nullptr) : hints_.customer(in.c_w, in.c_d, in.c);
    RecordHint& ch = cm.hint;
    std::string name_key;  // the customer_name entry the customer was found through
    if (in.by_name && !customer_by_name(in.c_w, in.c_d, in.last, &c, &ch, &name_key)) {
      fail("customer named " + in.last, in.c_w, in.c_d);
      return;
    }
    const std::string ckey = key_customer(in.c_w, in.c_d, c);
    CustomerRow cr;
    if (!read_through(db_.customer, ckey, &ch, &cr, db_.customer_name, name_key)) {
      fail("customer", in.c_w, in.c_d);
      return;
    }
    const bool bad_credit = field(cr.credit) == "BC";
    std::string note;
    if (bad_credit) {
      note = std::to_string(c) + " " + std::to_string(in.c_d) + " " + std::to_string(in.c_w) + " " +
             std::to_string(in.d) + " " + std::to_string(in.w) + " " + std::to_string(in.amount_cents) + " | ";
    }
    // Same record, same hint: the customer read above is in this transaction's read set.
    db_.customer.template update<CustomerRow>(ckey, &ch, [&](CustomerRow& r) {
      r.balance_cents -= in.amount_cents;
      r.ytd_payment_cents += in.amount_cents;
      r.payment_cnt++;
      if (bad_credit) {
        // C_DATA = the new note followed by the old data, truncated to the field.
        std::string data = note + std::string(field(r.data));
        set_field(r.data, data);
      }
    });
    HistoryRow h{};
    h.amount_cents = in.amount_cents;
    h.date = now_date();
    h.c_id = c, h.c_d_id = in.c_d, h.c_w_id = in.c_w, h.d_id = in.d, h.w_id = in.w;
    std::string hdata = std::string(field(w_name)) + "    " + std::string(field(d_name));
    set_field(h.data, hdata);
    if (!db_.history.insert_row(key_history(origin_, ++history_seq_), h)) fail("history (duplicate key)", in.w, in.d);
  }

  // --- Order-Status (clause 2.6.2) ------------------------------------------------------
  OrderStatusResult order_status(const OrderStatusInput& in) {
    counters_.done[size_t(TxType::kOrderStatus)]++;
    counters_.by_name += in.by_name;
    OrderStatusResult res;
    uint32_t c = in.c;
    Remembered cm = in.by_name ? Remembered(nullptr) : hints_.customer(in.w, in.d, in.c);
    RecordHint& ch = cm.hint;
    std::string name_key;
    if (in.by_name && !customer_by_name(in.w, in.d, in.last, &c, &ch, &name_key)) {
      fail("customer named " + in.last, in.w, in.d);
      return res;
    }
    CustomerRow cr;
    if (!read_through(db_.customer, key_customer(in.w, in.d, c), &ch, &cr, db_.customer_name, name_key)) {
      fail("customer", in.w, in.d);
      return res;
    }
    res.c = c;
    res.balance_cents = cr.balance_cents;
    // The customer's newest order: the last entry of (w, d, c, *) in order_customer.
    const std::string prefix = key_customer(in.w, in.d, c);
    std::string okey, index_key;
    RecordHint oh;
    db_.order_customer.scan(prefix, [&](std::string_view k, std::string_view v) {
      if (!k.starts_with(prefix)) return false;
      SecondaryValue sv;
      if (decode_secondary(v, &sv)) {
        okey.assign(sv.primary_key);
        index_key.assign(k);
        oh = sv.hint;
      }
      return true;
    });
    if (okey.empty()) {
      fail("an order of customer " + std::to_string(c), in.w, in.d);
      return res;
    }
    OrderRow orow;
    if (!read_through(db_.order, okey, &oh, &orow, db_.order_customer, index_key)) {
      fail("order named by order_customer", in.w, in.d);
      return res;
    }
    res.o = KeyReader(okey.substr(8)).u32();
    res.carrier_id = orow.carrier_id;
    res.found = true;
    db_.order_line.scan(okey, [&](std::string_view k, std::string_view v) {
      if (!k.starts_with(okey)) return false;
      OrderLineRow l;
      if (row_from(v, &l)) ++res.lines;
      return true;
    });
    return res;
  }

  // --- Delivery (clause 2.7.4), all ten districts ---------------------------------------
  // Returns the number of districts delivered.
  uint32_t delivery(uint32_t w, uint32_t carrier) {
    counters_.done[size_t(TxType::kDelivery)]++;
    uint32_t delivered = 0;
    const uint64_t date = now_date();
    for (uint32_t d = 1; d <= kDistricts; ++d) {
      uint32_t o = 0;
      for (int attempt = 0; attempt < kDeliveryClaimTries && o == 0; ++attempt) {
        const std::string prefix = key_district(w, d);
        uint32_t oldest = 0;
        db_.new_order.scan(prefix, [&](std::string_view k, std::string_view) {
          if (k.starts_with(prefix) && k.size() == 12) oldest = KeyReader(k.substr(8)).u32();
          return false;
        });
        if (oldest == 0) break;  // no undelivered order
        if (db_.new_order.remove(key_new_order(w, d, oldest))) {
          o = oldest;  // claimed: only this thread's remove() returned true
        } else {
          counters_.delivery_claims_lost++;
        }
      }
      if (o == 0) {
        counters_.delivery_skipped++;
        continue;
      }
      const std::string okey = key_order(w, d, o);
      uint32_t c = 0, ol_cnt = 0;
      RecordHint oh;
      if (!db_.order.template update<OrderRow>(okey, &oh, [&](OrderRow& r) {
            c = r.c_id;
            ol_cnt = r.ol_cnt;
            r.carrier_id = carrier;
          })) {
        fail("order of a new-order row", w, d);
        continue;
      }
      int64_t total = 0;
      for (uint32_t n = 1; n <= ol_cnt; ++n) {
        RecordHint lh;
        if (!db_.order_line.template update<OrderLineRow>(key_order_line(w, d, o, n), &lh, [&](OrderLineRow& l) {
              total += l.amount_cents;
              l.delivery_d = date;
            })) {
          fail("order line " + std::to_string(n) + " of order " + std::to_string(o), w, d);
        }
      }
      Remembered ch = hints_.customer(w, d, c);
      if (!db_.customer.template update<CustomerRow>(key_customer(w, d, c), &ch.hint, [&](CustomerRow& r) {
            r.balance_cents += total;
            r.delivery_cnt++;
          })) {
        fail("customer of order " + std::to_string(o), w, d);
      }
      ++delivered;
    }
    return delivered;
  }

  // --- Stock-Level (clause 2.8.2) -------------------------------------------------------
  // The number of distinct items of the district's last 20 orders with stock below threshold.
  uint32_t stock_level(uint32_t w, uint32_t d, uint32_t threshold) {
    counters_.done[size_t(TxType::kStockLevel)]++;
    DistrictRow dr;
    Remembered dh = hints_.district(w, d);
    if (!db_.district.read(key_district(w, d), &dh.hint, &dr)) {
      fail("district", w, d);
      return 0;
    }
    const uint32_t hi = dr.next_o_id;
    const uint32_t lo = hi > kStockLevelOrders ? hi - kStockLevelOrders : 1;
    const std::string prefix = key_district(w, d);
    std::vector<uint32_t> ids;
    db_.order_line.scan(key_order_line(w, d, lo, 0), [&](std::string_view k, std::string_view v) {
      if (!k.starts_with(prefix) || k.size() != 16) return false;
      KeyReader kr(k.substr(8));
      if (kr.u32() >= hi) return false;
      OrderLineRow l;
      if (row_from(v, &l)) ids.push_back(l.i_id);
      return true;
    });
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    uint32_t low = 0;
    for (uint32_t i : ids) {
      StockRow s;
      Remembered sh = hints_.stock(w, i);
      if (!db_.stock.read(key_stock(w, i), &sh.hint, &s)) {
        fail("stock of item " + std::to_string(i), w, d);
        continue;
      }
      low += s.quantity < static_cast<int32_t>(threshold);
    }
    return low;
  }

  // Customer by last name (clause 2.5.2.2): the customers of (w, d) with that last name in
  // first-name order; the one at position ceil(n / 2). Its c_id and the index entry's hint.
  bool customer_by_name(uint32_t w, uint32_t d, const std::string& last, uint32_t* c, RecordHint* hint,
                        std::string* index_key) {
    const std::string prefix = key_customer_name_prefix(w, d, last);
    struct Match {
      uint32_t c;
      RecordHint hint;
      std::string index_key;
    };
    std::vector<Match> found;
    db_.customer_name.scan(prefix, [&](std::string_view k, std::string_view v) {
      if (!k.starts_with(prefix)) return false;
      SecondaryValue sv;
      if (k.size() == kCustomerNameKeyBytes && decode_secondary(v, &sv) && sv.primary_key.size() == 12) {
        found.push_back({KeyReader(sv.primary_key.substr(8)).u32(), sv.hint, std::string(k)});
      }
      return true;
    });
    if (found.empty()) return false;
    const Match& m = found[(found.size() + 1) / 2 - 1];
    *c = m.c;
    *hint = m.hint;
    *index_key = m.index_key;
    return true;
  }

  // Reads a primary record starting from *hint; when the record was found through the
  // secondary index entry at index_key (non-empty) and the read changed the hint, the entry's
  // hint is rewritten (the opportunistic repair of index skipping; never with skipping off,
  // which leaves *hint as it was).
  template <class Row>
  bool read_through(TableT& table, std::string_view key, RecordHint* hint, Row* out, TableT& index,
                    std::string_view index_key) {
    const RecordHint before = *hint;
    if (!table.read(key, hint, out)) return false;
    if (!index_key.empty() && !(before == *hint)) {
      index.store_secondary_hint(index_key, *hint);
    }
    return true;
  }

 private:
  uint32_t customer_id() { return rng_.nurand(kCIdA, 1, sc_.customers, kCIdC); }
  std::string run_last_name() { return last_name(rng_.nurand(kCLastA, 0, sc_.name_numbers() - 1, kCLastRunC)); }

  bool fail(const std::string& what, uint32_t w, uint32_t d) {
    if (counters_.failures++ == 0) {
      counters_.first_failure = "missing " + what + " (warehouse " + std::to_string(w) +
                                (d ? ", district " + std::to_string(d) : std::string()) + ")";
    }
    return false;
  }

  Database<TableT>& db_;
  const Scale sc_;
  const uint32_t origin_;
  Random rng_;
  HintMemory hints_;
  uint64_t history_seq_ = 0;
  int64_t total_display_ = 0;
  TxCounters counters_;
};

}  // namespace calico::bench::tpcc
