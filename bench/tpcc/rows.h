// TPC-C rows: fixed-size structs stored as the B+tree values, copied in and out with memcpy
// (leaf values have no alignment). Fields are ordered so that no struct has padding
// (static_asserts below), so a row's bytes are exactly its fields.
//
// Money is integer cents (int64) and rates are basis points (1/10000, int32), so that the
// consistency checks (W_YTD = sum of D_YTD, ...) compare exact sums. Strings are fixed
// char arrays, zero padded. "Null" dates and carrier ids are 0 (valid ones are >= 1).
// Deviation from the spec's sizes: C_DATA is 300 bytes fixed (spec: 300..500 variable), so
// that a customer row fits the B+tree's 512-byte value limit (calico/index/btree.h).
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "calico/checks.h"

namespace calico::bench::tpcc {

struct WarehouseRow {
  int64_t ytd_cents;
  int32_t tax_bp;
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
  char pad_[11];
};

struct DistrictRow {
  int64_t ytd_cents;
  int32_t tax_bp;
  uint32_t next_o_id;
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
  char pad_[7];
};

struct CustomerRow {
  int64_t credit_lim_cents;
  int64_t balance_cents;
  int64_t ytd_payment_cents;
  uint64_t since;
  int32_t discount_bp;
  uint32_t payment_cnt;
  uint32_t delivery_cnt;
  char first[16];
  char middle[2];
  char last[16];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
  char phone[16];
  char credit[2];  // "GC" or "BC"
  char data[300];
  char pad_[5];
};

struct HistoryRow {
  int64_t amount_cents;
  uint64_t date;
  uint32_t c_id, c_d_id, c_w_id, d_id, w_id;
  char data[24];
  char pad_[4];
};

struct OrderRow {
  uint64_t entry_d;
  uint32_t c_id;
  uint32_t carrier_id;  // 0 = null
  uint32_t ol_cnt;
  uint32_t all_local;
};

struct OrderLineRow {
  int64_t amount_cents;
  uint64_t delivery_d;  // 0 = null
  uint32_t i_id;
  uint32_t supply_w_id;
  uint32_t quantity;
  char dist_info[24];
  char pad_[4];
};

struct ItemRow {
  int64_t price_cents;
  uint32_t im_id;
  char name[24];
  char data[50];
  char pad_[2];
};

struct StockRow {
  int64_t ytd;
  int32_t quantity;
  uint32_t order_cnt;
  uint32_t remote_cnt;
  char dist[10][24];
  char data[50];
  char pad_[2];
};

static_assert(sizeof(WarehouseRow) == 104 && std::has_unique_object_representations_v<WarehouseRow>);
static_assert(sizeof(DistrictRow) == 104 && std::has_unique_object_representations_v<DistrictRow>);
static_assert(sizeof(CustomerRow) == 472 && std::has_unique_object_representations_v<CustomerRow>);
static_assert(sizeof(HistoryRow) == 64 && std::has_unique_object_representations_v<HistoryRow>);
static_assert(sizeof(OrderRow) == 24 && std::has_unique_object_representations_v<OrderRow>);
static_assert(sizeof(OrderLineRow) == 56 && std::has_unique_object_representations_v<OrderLineRow>);
static_assert(sizeof(ItemRow) == 88 && std::has_unique_object_representations_v<ItemRow>);
static_assert(sizeof(StockRow) == 312 && std::has_unique_object_representations_v<StockRow>);

// A row's bytes as a B+tree value.
template <class Row>
std::string_view row_bytes(const Row& r) {
  static_assert(std::is_trivially_copyable_v<Row>);
  return std::string_view(reinterpret_cast<const char*>(&r), sizeof r);
}
// Decodes a stored value; false when its length is not the row's (a value of another table).
template <class Row>
bool row_from(std::string_view v, Row* out) {
  if (v.size() != sizeof(Row)) return false;
  std::memcpy(out, v.data(), sizeof(Row));
  return true;
}
template <class Row>
bool row_from(std::span<const std::byte> v, Row* out) {
  return row_from(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()), out);
}

// Copies s into a fixed field, truncated or zero padded.
template <size_t N>
void set_field(char (&dst)[N], std::string_view s) {
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), std::min(N, s.size()));
}
template <size_t N>
std::string_view field(const char (&src)[N]) {
  return std::string_view(src, strnlen(src, N));
}

}  // namespace calico::bench::tpcc
