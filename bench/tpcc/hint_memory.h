// HintMemory: the RecordHints of the primary records a terminal (one worker thread) touched
// in its earlier transactions, kept by record id: warehouse, district, customer, item, stock.
//
// LIPAH ([LIPAH] sections 4-5) keeps hints in secondary index entries and in a
// transaction's read/write set; this keeps the read/write set's hints after the transaction
// ends, so that the terminal's next access to the same record starts at its leaf instead of
// the root. That is where TPC-C's lookups are: New-Order reads its items and updates their
// stock rows by primary key (no secondary index is involved), and warehouse and district
// rows are touched by almost every transaction. A remembered hint is a hint like any other
// (table.h): it is validated, a stale one falls back to the descent, and the read or update
// writes the record's real position back into it.
//
// Entry points: HintMemory(scale, on); warehouse / district / customer / item / stock(ids)
// return a Remembered: .hint to pass as the RecordHint*, stored back when it goes out of scope.
// Off (or an id outside the scale, e.g. New-Order's unused item): an empty hint that is not
// kept, which is exactly the behaviour without it.
//
// Memory: 8 bytes per record of those five tables (stock dominates: warehouses x items),
// per terminal. Not thread-safe: one per worker.
#pragma once

#include <cstdint>
#include <vector>

#include "scale.h"
#include "typed_rows.h"

namespace calico::bench::tpcc {

// A hint on loan from a HintMemory: written back to its slot (if any) on destruction.
class Remembered {
 public:
  explicit Remembered(RecordHint* slot) : hint(slot != nullptr ? *slot : RecordHint{}), slot_(slot) {}
  Remembered(const Remembered&) = delete;
  Remembered& operator=(const Remembered&) = delete;
  ~Remembered() {
    if (slot_ != nullptr) *slot_ = hint;
  }
  RecordHint hint;

 private:
  RecordHint* slot_;
};

class HintMemory {
 public:
  HintMemory(const Scale& sc, bool on) : sc_(sc), on_(on) {
    if (!on) return;
    warehouses_.resize(size_t{sc.warehouses} + 1);
    districts_.resize((size_t{sc.warehouses} + 1) * (kDistricts + 1));
    customers_.resize((size_t{sc.warehouses} + 1) * (kDistricts + 1) * (size_t{sc.customers} + 1));
    items_.resize(size_t{sc.items} + 1);
    stock_.resize((size_t{sc.warehouses} + 1) * (size_t{sc.items} + 1));
  }

  bool on() const { return on_; }
  Remembered warehouse(uint32_t w) { return Remembered(slot(warehouses_, w, w <= sc_.warehouses)); }
  Remembered district(uint32_t w, uint32_t d) {
    return Remembered(slot(districts_, size_t{w} * (kDistricts + 1) + d, w <= sc_.warehouses && d <= kDistricts));
  }
  Remembered customer(uint32_t w, uint32_t d, uint32_t c) {
    return Remembered(slot(customers_, (size_t{w} * (kDistricts + 1) + d) * (size_t{sc_.customers} + 1) + c,
                           w <= sc_.warehouses && d <= kDistricts && c <= sc_.customers));
  }
  Remembered item(uint32_t i) { return Remembered(slot(items_, i, i <= sc_.items)); }
  Remembered stock(uint32_t w, uint32_t i) {
    return Remembered(slot(stock_, size_t{w} * (size_t{sc_.items} + 1) + i, w <= sc_.warehouses && i <= sc_.items));
  }

 private:
  RecordHint* slot(std::vector<RecordHint>& v, size_t i, bool in_scale) {
    return on_ && in_scale ? &v[i] : nullptr;
  }

  Scale sc_;
  bool on_;
  std::vector<RecordHint> warehouses_, districts_, customers_, items_, stock_;
};

}  // namespace calico::bench::tpcc
