// Pool and space sizes for a TPC-C database: an estimate of the loaded pages, the growth of
// a run, the smallest pool the driver accepts.
//
// Entry points: estimated_pages(scale), growth_pages(seconds x threads), min_frames(threads),
// check_pool(...).
//
// The estimate counts every record as key + value + 16 bytes of slot and length fields in
// leaves filled to 1/2: the loader inserts in key order, and the B+tree splits a full leaf
// in halves (calico/index/btree.h), so sequentially loaded leaves end half full.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "rows.h"
#include "scale.h"

namespace calico::bench::tpcc {

inline uint64_t table_pages(uint64_t rows, uint64_t record_bytes, uint64_t page_size) {
  const uint64_t per_page = std::max<uint64_t>(1, (page_size / 2) / (record_bytes + 16));
  return rows / per_page + 1;
}

inline uint64_t item_pages(const Scale& s, uint64_t page_size) {
  return table_pages(s.items, 4 + sizeof(ItemRow), page_size);
}

// Pages of a freshly loaded database (all eleven trees).
inline uint64_t estimated_pages(const Scale& s, uint64_t page_size) {
  const uint64_t w = s.warehouses, dc = uint64_t{s.customers} * kDistricts * w;
  const uint64_t lines = dc * (kMinOrderLines + kMaxOrderLines) / 2;
  return table_pages(w, 4 + sizeof(WarehouseRow), page_size) +
         table_pages(w * kDistricts, 8 + sizeof(DistrictRow), page_size) +
         table_pages(dc, 12 + sizeof(CustomerRow), page_size) + table_pages(dc, 12 + sizeof(HistoryRow), page_size) +
         table_pages(dc * 3 / 10, 12, page_size) + table_pages(dc, 12 + sizeof(OrderRow), page_size) +
         table_pages(lines, 16 + sizeof(OrderLineRow), page_size) + item_pages(s, page_size) +
         table_pages(w * s.items, 8 + sizeof(StockRow), page_size) + table_pages(dc, 44 + 20, page_size) +
         table_pages(dc, 16 + 20, page_size);
}

// Pages a run may add: New-Order (45%) adds an order, ~10 lines, an index entry and a
// new-order row (~1.1 KB in half-full leaves); Payment a history row. Assumes at most
// 100000 transactions per second per thread, far above what a 2-core machine does.
inline uint64_t growth_pages(double thread_seconds, uint64_t page_size) {
  const double tx = thread_seconds * 100000;
  return static_cast<uint64_t>(tx * (0.45 * 1100 + 0.43 * 160) / static_cast<double>(page_size)) + 1;
}

// The fewest frames the driver runs with: every worker pins at most three pages at once
// (a B+tree split), and the pool keeps an eviction batch of free frames; 8 per thread and
// 32 more leave room for both.
inline uint64_t min_frames(unsigned threads) { return 32 + 8 * uint64_t{threads}; }

}  // namespace calico::bench::tpcc
