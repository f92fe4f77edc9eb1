// TPC-C cardinalities (clause 1.2, 4.3.3.1) and the `scale` knob that shrinks them for tests.
//
// Entry point: Scale::make(warehouses, scale). At scale 1 the counts are the spec's: 10
// districts per warehouse, 3000 customers and 3000 initial orders per district (the last
// 900 undelivered, with new-order rows), 100000 items and stock rows per warehouse. A scale
// s in (0, 1] multiplies customers, orders and items by s (ratios kept: orders =
// customers, undelivered = 30% of them), with floors so that every transaction still has
// rows to work on. NURand keeps the spec's A constants over the scaled ranges.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace calico::bench::tpcc {

inline constexpr uint32_t kDistricts = 10;
inline constexpr uint32_t kSpecCustomers = 3000;  // per district
inline constexpr uint32_t kSpecItems = 100000;
inline constexpr uint32_t kMaxWarehouses = 1u << 20;
inline constexpr uint32_t kMinOrderLines = 5, kMaxOrderLines = 15;

struct Scale {
  uint32_t warehouses = 1;
  uint32_t customers = kSpecCustomers;  // per district; also the initial orders per district
  uint32_t items = kSpecItems;          // items, and stock rows per warehouse
  uint32_t new_orders = 900;            // initial undelivered orders per district (the last ones)
  double factor = 1.0;

  // Errors: std::invalid_argument naming the parameter (warehouses 0 or > kMaxWarehouses,
  // scale outside (0, 1]).
  static Scale make(uint32_t warehouses, double scale) {
    if (warehouses == 0) throw std::invalid_argument("--warehouses must be at least 1 (got 0)");
    if (warehouses > kMaxWarehouses) {
      throw std::invalid_argument("--warehouses " + std::to_string(warehouses) + " is above the limit of " +
                                  std::to_string(kMaxWarehouses));
    }
    if (!(scale > 0.0 && scale <= 1.0)) {
      throw std::invalid_argument("--scale must be in (0, 1] (got " + std::to_string(scale) + ")");
    }
    Scale s;
    s.warehouses = warehouses;
    s.factor = scale;
    s.customers = std::max<uint32_t>(10, static_cast<uint32_t>(std::lround(kSpecCustomers * scale)));
    s.items = std::max<uint32_t>(100, static_cast<uint32_t>(std::lround(kSpecItems * scale)));
    s.new_orders = std::max<uint32_t>(1, s.customers * 3 / 10);
    return s;
  }
  // Last names are numbers 0..name_numbers()-1 (all of 0..999 at full scale): the loader
  // gives customer c the number c - 1 below 1000 and NURand's beyond, so every name the run
  // draws exists in every district.
  uint32_t name_numbers() const { return std::min<uint32_t>(1000, customers); }
  // The first undelivered order id of a district after the load.
  uint32_t first_new_order() const { return customers - new_orders + 1; }
};

}  // namespace calico::bench::tpcc
