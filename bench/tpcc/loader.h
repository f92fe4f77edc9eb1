// The TPC-C initial population (clause 4.3.3.1), scaled by Scale (scale.h).
//
// Entry points: load_items(db, rng), load_warehouse(db, w, rng), load(db, threads, seed,
// progress) (items, then the warehouses spread over `threads` loader threads).
//
// What is loaded, per warehouse w: the warehouse row (W_YTD = 10 x D_YTD), its 10
// districts (D_YTD = customers x 10.00, D_NEXT_O_ID = customers + 1), customers with one
// history row each (H_AMOUNT 10.00, C_BALANCE -10.00, C_YTD_PAYMENT 10.00), orders 1..
// customers for a random permutation of the customers, their 5..15 order lines, and
// new-order rows for the last 30% of them (O_CARRIER_ID and OL_DELIVERY_D null there, OL_AMOUNT
// random; delivered orders have OL_AMOUNT 0), stock for every item. The secondary indexes
// get every customer and order, with zero hints. The initial state meets every condition
// the consistency checker tests (consistency.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <ctime>
#include <exception>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "database.h"
#include "keys.h"
#include "random.h"

namespace calico::bench::tpcc {

// A date for the rows (seconds since the epoch; never 0, which means null).
inline uint64_t now_date() { return std::max<uint64_t>(1, static_cast<uint64_t>(std::time(nullptr))); }

template <class TableT>
void load_items(Database<TableT>& db, Random& rng) {
  for (uint32_t i = 1; i <= db.scale.items; ++i) {
    ItemRow r{};
    r.price_cents = rng.uniform(100, 10000);
    r.im_id = rng.uniform(1, 10000);
    set_field(r.name, rng.astring(14, 24));
    set_field(r.data, rng.data_with_original());
    db.item.insert_row(key_item(i), r);
  }
}

template <class TableT>
void load_warehouse(Database<TableT>& db, uint32_t w, Random& rng) {
  const Scale& sc = db.scale;
  const int64_t district_ytd = int64_t{sc.customers} * 1000;
  const uint64_t date = now_date();
  {
    WarehouseRow r{};
    r.ytd_cents = district_ytd * kDistricts;
    r.tax_bp = static_cast<int32_t>(rng.uniform(0, 2000));
    set_field(r.name, rng.astring(6, 10));
    set_field(r.street_1, rng.astring(10, 20));
    set_field(r.street_2, rng.astring(10, 20));
    set_field(r.city, rng.astring(10, 20));
    set_field(r.state, rng.astring(2, 2));
    set_field(r.zip, rng.zip());
    db.warehouse.insert_row(key_warehouse(w), r);
  }
  for (uint32_t i = 1; i <= sc.items; ++i) {
    StockRow r{};
    r.quantity = static_cast<int32_t>(rng.uniform(10, 100));
    for (auto& d : r.dist) set_field(d, rng.astring(24, 24));
    set_field(r.data, rng.data_with_original());
    db.stock.insert_row(key_stock(w, i), r);
  }
  std::vector<uint32_t> perm(sc.customers);
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    DistrictRow dr{};
    dr.ytd_cents = district_ytd;
    dr.tax_bp = static_cast<int32_t>(rng.uniform(0, 2000));
    dr.next_o_id = sc.customers + 1;
    set_field(dr.name, rng.astring(6, 10));
    set_field(dr.street_1, rng.astring(10, 20));
    set_field(dr.street_2, rng.astring(10, 20));
    set_field(dr.city, rng.astring(10, 20));
    set_field(dr.state, rng.astring(2, 2));
    set_field(dr.zip, rng.zip());
    db.district.insert_row(key_district(w, d), dr);
    for (uint32_t c = 1; c <= sc.customers; ++c) {
      CustomerRow r{};
      const uint32_t name = c <= 1000 ? c - 1 : rng.nurand(kCLastA, 0, 999, kCLastLoadC);
      set_field(r.last, last_name(name));
      set_field(r.first, rng.astring(8, 16));
      set_field(r.middle, "OE");
      set_field(r.street_1, rng.astring(10, 20));
      set_field(r.street_2, rng.astring(10, 20));
      set_field(r.city, rng.astring(10, 20));
      set_field(r.state, rng.astring(2, 2));
      set_field(r.zip, rng.zip());
      set_field(r.phone, rng.nstring(16, 16));
      r.since = date;
      set_field(r.credit, rng.uniform(1, 100) <= 10 ? "BC" : "GC");
      r.credit_lim_cents = 5000000;
      r.discount_bp = static_cast<int32_t>(rng.uniform(0, 5000));
      r.balance_cents = -1000;
      r.ytd_payment_cents = 1000;
      r.payment_cnt = 1;
      set_field(r.data, rng.astring(300, 300));
      const std::string key = key_customer(w, d, c);
      RecordHint hint;
      db.customer.insert_row(key, r, &hint);
      db.customer_name.insert(key_customer_name(w, d, field(r.last), field(r.first), c), encode_secondary(key, hint));
      HistoryRow h{};
      h.c_id = c, h.c_d_id = d, h.c_w_id = w, h.d_id = d, h.w_id = w;
      h.date = date;
      h.amount_cents = 1000;
      set_field(h.data, rng.astring(12, 24));
      db.history.insert_row(key_history(0, (uint64_t{w} * kDistricts + d) * sc.customers + c), h);
    }
    std::iota(perm.begin(), perm.end(), 1u);
    for (uint32_t i = sc.customers; i > 1; --i) std::swap(perm[i - 1], perm[rng.uniform(0, i - 1)]);
    for (uint32_t o = 1; o <= sc.customers; ++o) {
      const bool delivered = o < sc.first_new_order();
      OrderRow r{};
      r.c_id = perm[o - 1];
      r.entry_d = date;
      r.carrier_id = delivered ? rng.uniform(1, 10) : 0;
      r.ol_cnt = rng.uniform(kMinOrderLines, kMaxOrderLines);
      r.all_local = 1;
      const std::string key = key_order(w, d, o);
      RecordHint hint;
      db.order.insert_row(key, r, &hint);
      for (uint32_t n = 1; n <= r.ol_cnt; ++n) {
        OrderLineRow l{};
        l.i_id = rng.uniform(1, sc.items);
        l.supply_w_id = w;
        l.delivery_d = delivered ? date : 0;
        l.quantity = 5;
        l.amount_cents = delivered ? 0 : rng.uniform(1, 999999);
        set_field(l.dist_info, rng.astring(24, 24));
        db.order_line.insert_row(key_order_line(w, d, o, n), l);
      }
      db.order_customer.insert(key_order_customer(w, d, r.c_id, o), encode_secondary(key, hint));
      if (!delivered) db.new_order.insert(key_new_order(w, d, o), "");
    }
  }
}

// Makes every secondary entry's hint name where its primary record is now. The loader
// records each record's position at insert time, and later inserts split those leaves, so
// most entries would start stale (repaired only when a transaction reads through them).
// Reads each entry's primary record with index skipping on (the hinted read falls back to
// the descent and reports the real position) and rewrites the hints that changed; returns
// how many. Runs alone (no transaction), in chunks of kChunk entries (bounded memory).
// Backends without hints have nothing to refresh.
template <class TableT>
uint64_t refresh_secondary_hints(Database<TableT>& db) {
  constexpr size_t kChunk = 4096;
  uint64_t changed = 0;
  const std::pair<TableT*, TableT*> indexes[] = {{&db.customer_name, &db.customer}, {&db.order_customer, &db.order}};
  for (auto [secondary, primary] : indexes) {
    const bool was = primary->index_skipping();
    primary->set_index_skipping(true);
    std::vector<std::pair<std::string, std::string>> chunk;  // (secondary key, value)
    std::string start, row;
    for (bool more = true; more;) {
      chunk.clear();
      secondary->scan(start, [&](std::string_view k, std::string_view v) {
        if (chunk.size() == kChunk) return false;
        chunk.emplace_back(std::string(k), std::string(v));
        return true;
      });
      more = chunk.size() == kChunk;
      for (const auto& [k, v] : chunk) {
        SecondaryValue sv;
        if (!decode_secondary(v, &sv)) continue;  // the consistency checks report it
        RecordHint h = sv.hint;
        if (primary->read_value(sv.primary_key, &h, &row) && !(h == sv.hint)) {
          changed += secondary->store_secondary_hint(k, h);
        }
      }
      if (more) start = chunk.back().first + '\0';  // the next key after the chunk's last
    }
    primary->set_index_skipping(was);
  }
  return changed;
}

// Loads the items and every warehouse with `threads` threads (warehouse w by loader w mod
// threads; the items by loader 0 first). progress(line) is called after each part, from
// any loader thread, one call at a time. The first error of any loader is rethrown after all
// have stopped.
template <class TableT>
void load(Database<TableT>& db, unsigned threads, uint64_t seed, const std::function<void(const std::string&)>& progress) {
  threads = std::max(1u, std::min(threads, db.scale.warehouses));
  std::mutex mu;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  std::atomic<uint32_t> done{0};
  auto report = [&](const std::string& line) {
    std::lock_guard lock(mu);
    if (progress) progress(line);
  };
  auto loader = [&](unsigned t) {
    try {
      Random rng(seed * 0x9E3779B97F4A7C15ull + t + 1);
      if (t == 0) {
        load_items(db, rng);
        report("items: " + std::to_string(db.scale.items));
      }
      for (uint32_t w = 1; w <= db.scale.warehouses && !failed.load(); ++w) {
        if (w % threads != t) continue;
        load_warehouse(db, w, rng);
        uint32_t n = done.fetch_add(1) + 1;
        report("warehouse " + std::to_string(w) + " (" + std::to_string(n) + "/" +
               std::to_string(db.scale.warehouses) + ")");
      }
    } catch (...) {
      std::lock_guard lock(mu);
      if (!error) error = std::current_exception();
      failed.store(true);
    }
  };
  std::vector<std::thread> ts;
  for (unsigned t = 1; t < threads; ++t) ts.emplace_back(loader, t);
  loader(0);
  for (auto& th : ts) th.join();
  if (error) std::rethrow_exception(error);
  if constexpr (TableT::kHasHints) {
    const uint64_t changed = refresh_secondary_hints(db);
    if (progress) progress("secondary index hints refreshed: " + std::to_string(changed) + " changed");
  }
}

}  // namespace calico::bench::tpcc
