// The TPC-C consistency conditions (clause 3.3.2), checked over the whole database while no
// transaction runs (after every run; the tests after theirs).
//
// Entry points: check_consistency(db) -> Violations; Violation::to_string.
//
// Conditions checked, per warehouse / district (the clause's numbers):
//   1  W_YTD = sum of D_YTD
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) (max(NO_O_ID) when new-order rows exist)
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = the number of new-order rows
//   4  sum of O_OL_CNT = the number of order lines
//   5  O_CARRIER_ID is null iff the order has a new-order row (and no new-order row without
//      its order)
//   6  each order's O_OL_CNT = its number of order lines
//   7  OL_DELIVERY_D is null iff the order's O_CARRIER_ID is null
//   8  W_YTD = sum of H_AMOUNT of the warehouse's history
//   9  D_YTD = sum of H_AMOUNT of the district's history
//   10 C_BALANCE = sum of OL_AMOUNT of the customer's delivered lines - sum of its H_AMOUNT
//  plus the secondary indexes against the primaries:
//   idx-customer  every customer has exactly its (w, d, last, first, c) entry, naming its key
//   idx-order     every order has exactly its (w, d, c, o) entry, naming its key
// (11 and 12 need C_DELIVERY_CNT / C_YTD_PAYMENT histories that hold too, but add nothing
// that 10 does not already test.) Every record is decoded with its row size checked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "database.h"
#include "keys.h"

namespace calico::bench::tpcc {

struct Violation {
  std::string condition;  // "1", "2", ..., "idx-customer", "row"
  uint32_t w = 0, d = 0;  // 0 = not specific
  std::string detail;
  std::string to_string() const {
    std::string s = "condition " + condition;
    if (w) s += " warehouse " + std::to_string(w);
    if (d) s += " district " + std::to_string(d);
    return s + ": " + detail;
  }
};
using Violations = std::vector<Violation>;

namespace consistency_detail {

inline uint64_t wd(uint32_t w, uint32_t d) { return uint64_t{w} << 8 | d; }
inline uint64_t wdo(uint32_t w, uint32_t d, uint32_t o) { return uint64_t{w} << 40 | uint64_t{d} << 32 | o; }

struct OrderInfo {
  uint32_t c_id = 0, carrier = 0, ol_cnt = 0;
  uint32_t lines = 0, delivered_lines = 0;
  int64_t delivered_amount = 0;
  bool new_order = false;
};
struct DistrictInfo {
  int64_t ytd = 0;
  uint32_t next_o_id = 0;
  uint32_t max_o = 0;
  uint64_t ol_cnt_sum = 0, lines = 0;
  uint32_t no_min = UINT32_MAX, no_max = 0;
  uint64_t no_count = 0;
  int64_t history = 0;
};

}  // namespace consistency_detail

template <class TableT>
Violations check_consistency(Database<TableT>& db) {
  using namespace consistency_detail;
  Violations out;
  auto add = [&](std::string cond, uint32_t w, uint32_t d, std::string detail) {
    out.push_back({std::move(cond), w, d, std::move(detail)});
  };
  auto s = [](auto v) { return std::to_string(v); };

  std::map<uint32_t, int64_t> w_ytd, w_history;
  std::map<uint64_t, DistrictInfo> dist;  // ordered: reports come in (w, d) order
  std::unordered_map<uint64_t, OrderInfo> orders;
  std::unordered_map<uint64_t, int64_t> c_delivered, c_history;  // by wdo(w, d, c)

  db.warehouse.scan("", [&](std::string_view k, std::string_view v) {
    WarehouseRow r;
    if (k.size() != 4 || !row_from(v, &r)) return add("row", 0, 0, "bad warehouse record"), true;
    w_ytd[KeyReader(k).u32()] = r.ytd_cents;
    return true;
  });
  db.district.scan("", [&](std::string_view k, std::string_view v) {
    DistrictRow r;
    if (k.size() != 8 || !row_from(v, &r)) return add("row", 0, 0, "bad district record"), true;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32();
    dist[wd(w, d)].ytd = r.ytd_cents;
    dist[wd(w, d)].next_o_id = r.next_o_id;
    return true;
  });
  db.order.scan("", [&](std::string_view k, std::string_view v) {
    OrderRow r;
    if (k.size() != 12 || !row_from(v, &r)) return add("row", 0, 0, "bad order record"), true;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32(), o = kr.u32();
    OrderInfo& oi = orders[wdo(w, d, o)];
    oi.c_id = r.c_id, oi.carrier = r.carrier_id, oi.ol_cnt = r.ol_cnt;
    DistrictInfo& di = dist[wd(w, d)];
    di.max_o = std::max(di.max_o, o);
    di.ol_cnt_sum += r.ol_cnt;
    return true;
  });
  db.new_order.scan("", [&](std::string_view k, std::string_view) {
    if (k.size() != 12) return add("row", 0, 0, "bad new-order key"), true;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32(), o = kr.u32();
    DistrictInfo& di = dist[wd(w, d)];
    di.no_min = std::min(di.no_min, o);
    di.no_max = std::max(di.no_max, o);
    di.no_count++;
    auto it = orders.find(wdo(w, d, o));
    if (it == orders.end()) {
      add("5", w, d, "new-order row " + s(o) + " has no order");
    } else {
      it->second.new_order = true;
    }
    return true;
  });
  db.order_line.scan("", [&](std::string_view k, std::string_view v) {
    OrderLineRow r;
    if (k.size() != 16 || !row_from(v, &r)) return add("row", 0, 0, "bad order-line record"), true;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32(), o = kr.u32(), n = kr.u32();
    dist[wd(w, d)].lines++;
    auto it = orders.find(wdo(w, d, o));
    if (it == orders.end()) {
      add("6", w, d, "order line " + s(n) + " of order " + s(o) + " has no order");
      return true;
    }
    OrderInfo& oi = it->second;
    oi.lines++;
    if (r.delivery_d != 0) {
      oi.delivered_lines++;
      oi.delivered_amount += r.amount_cents;
    }
    return true;
  });
  db.history.scan("", [&](std::string_view, std::string_view v) {
    HistoryRow r;
    if (!row_from(v, &r)) return add("row", 0, 0, "bad history record"), true;
    w_history[r.w_id] += r.amount_cents;
    dist[wd(r.w_id, r.d_id)].history += r.amount_cents;
    c_history[wdo(r.c_w_id, r.c_d_id, r.c_id)] += r.amount_cents;
    return true;
  });

  // Per order: 5, 6, 7; delivered amounts per customer for 10.
  std::vector<std::pair<uint64_t, const OrderInfo*>> sorted;
  sorted.reserve(orders.size());
  for (const auto& [key, oi] : orders) sorted.push_back({key, &oi});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [key, oi] : sorted) {
    const uint32_t w = key >> 40, d = (key >> 32) & 0xff, o = key & 0xffffffff;
    if ((oi->carrier == 0) != oi->new_order) {
      add("5", w, d, "order " + s(o) + ": O_CARRIER_ID " + (oi->carrier ? s(oi->carrier) : "null") + " but " +
                         (oi->new_order ? "a" : "no") + " new-order row");
    }
    if (oi->ol_cnt != oi->lines) {
      add("6", w, d, "order " + s(o) + ": O_OL_CNT " + s(oi->ol_cnt) + " but " + s(oi->lines) + " order lines");
    }
    const uint32_t want_delivered = oi->carrier == 0 ? 0 : oi->lines;
    if (oi->delivered_lines != want_delivered) {
      add("7", w, d, "order " + s(o) + ": O_CARRIER_ID " + (oi->carrier ? s(oi->carrier) : "null") + " but " +
                         s(oi->delivered_lines) + " of " + s(oi->lines) + " lines delivered");
    }
    c_delivered[wdo(w, d, oi->c_id)] += oi->delivered_amount;
  }

  // Per warehouse and district: 1, 2, 3, 4, 8, 9.
  std::map<uint32_t, int64_t> d_ytd_sum;
  for (const auto& [key, di] : dist) {
    const uint32_t w = key >> 8, d = key & 0xff;
    d_ytd_sum[w] += di.ytd;
    if (di.next_o_id == 0) {
      add("2", w, d, "orders or new-order rows of a district that does not exist");
      continue;
    }
    if (di.next_o_id - 1 != di.max_o) {
      add("2", w, d, "D_NEXT_O_ID - 1 = " + s(di.next_o_id - 1) + " but max(O_ID) = " + s(di.max_o));
    }
    if (di.no_count != 0) {
      if (di.no_max != di.next_o_id - 1) {
        add("2", w, d, "D_NEXT_O_ID - 1 = " + s(di.next_o_id - 1) + " but max(NO_O_ID) = " + s(di.no_max));
      }
      if (uint64_t{di.no_max} - di.no_min + 1 != di.no_count) {
        add("3", w, d, "max(NO_O_ID) - min(NO_O_ID) + 1 = " + s(uint64_t{di.no_max} - di.no_min + 1) + " but " +
                           s(di.no_count) + " new-order rows");
      }
    }
    if (di.ol_cnt_sum != di.lines) {
      add("4", w, d, "sum(O_OL_CNT) = " + s(di.ol_cnt_sum) + " but " + s(di.lines) + " order lines");
    }
    if (di.ytd != di.history) {
      add("9", w, d, "D_YTD = " + s(di.ytd) + " but sum(H_AMOUNT) = " + s(di.history));
    }
  }
  for (const auto& [w, ytd] : w_ytd) {
    if (ytd != d_ytd_sum[w]) add("1", w, 0, "W_YTD = " + s(ytd) + " but sum(D_YTD) = " + s(d_ytd_sum[w]));
    if (ytd != w_history[w]) add("8", w, 0, "W_YTD = " + s(ytd) + " but sum(H_AMOUNT) = " + s(w_history[w]));
  }

  // Customers: 10, and the customer-by-name index.
  std::set<std::string> name_entries;
  db.customer_name.scan("", [&](std::string_view k, std::string_view v) {
    SecondaryValue sv;
    if (!decode_secondary(v, &sv)) return add("idx-customer", 0, 0, "bad index value"), true;
    name_entries.insert(std::string(k) + '\x01' + std::string(sv.primary_key));
    return true;
  });
  uint64_t customers = 0;
  db.customer.scan("", [&](std::string_view k, std::string_view v) {
    CustomerRow r;
    if (k.size() != 12 || !row_from(v, &r)) return add("row", 0, 0, "bad customer record"), true;
    ++customers;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32(), c = kr.u32();
    const int64_t want = c_delivered[wdo(w, d, c)] - c_history[wdo(w, d, c)];
    if (r.balance_cents != want) {
      add("10", w, d, "customer " + s(c) + ": C_BALANCE = " + s(r.balance_cents) + " but delivered - paid = " + s(want));
    }
    const std::string entry = key_customer_name(w, d, field(r.last), field(r.first), c) + '\x01' + std::string(k);
    if (!name_entries.count(entry)) add("idx-customer", w, d, "customer " + s(c) + " is not found by its name");
    return true;
  });
  if (name_entries.size() != customers) {
    add("idx-customer", 0, 0, s(name_entries.size()) + " index entries for " + s(customers) + " customers");
  }

  // The order-by-customer index.
  uint64_t order_entries = 0;
  db.order_customer.scan("", [&](std::string_view k, std::string_view v) {
    ++order_entries;
    SecondaryValue sv;
    if (k.size() != 16 || !decode_secondary(v, &sv)) return add("idx-order", 0, 0, "bad index entry"), true;
    KeyReader kr(k);
    uint32_t w = kr.u32(), d = kr.u32(), c = kr.u32(), o = kr.u32();
    auto it = orders.find(wdo(w, d, o));
    if (sv.primary_key != key_order(w, d, o) || it == orders.end() || it->second.c_id != c) {
      add("idx-order", w, d, "entry (customer " + s(c) + ", order " + s(o) + ") names no such order");
    }
    return true;
  });
  if (order_entries != orders.size()) {
    add("idx-order", 0, 0, s(order_entries) + " index entries for " + s(orders.size()) + " orders");
  }
  return out;
}

}  // namespace calico::bench::tpcc
