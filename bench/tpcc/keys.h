// TPC-C keys: composite big-endian keys, so that the B+tree's byte order is the spec's order
// (warehouse, then district, then id ...), as in the vmcache/LeanStore drivers.
//
// Entry points: KeyWriter (append fields), the key_* functions of every table and index,
// KeyReader (decode fields back, for scans and the consistency checks).
//
// Ids are unsigned and start at 1, so 0 sorts before every id (scans start at "(w, d, 0)").
// Names in the customer-by-name index are fixed 16-byte fields, zero padded, so that
// comparing keys compares (last, first) as the spec orders them.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "calico/checks.h"

namespace calico::bench::tpcc {

inline constexpr size_t kNameBytes = 16;  // C_LAST, C_FIRST (spec: up to 16 characters)

class KeyWriter {
 public:
  KeyWriter& u32(uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) buf_.push_back(static_cast<char>((v >> s) & 0xff));
    return *this;
  }
  KeyWriter& u64(uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) buf_.push_back(static_cast<char>((v >> s) & 0xff));
    return *this;
  }
  // A fixed-width field: s truncated or zero padded to `width` bytes.
  KeyWriter& fixed(std::string_view s, size_t width) {
    for (size_t i = 0; i < width; ++i) buf_.push_back(i < s.size() ? s[i] : '\0');
    return *this;
  }
  std::string take() { return std::move(buf_); }

 private:
  std::string buf_;
};

class KeyReader {
 public:
  explicit KeyReader(std::string_view k) : k_(k) {}
  uint32_t u32() {
    CALICO_CHECK(pos_ + 4 <= k_.size());
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(k_[pos_++]);
    return v;
  }
  uint64_t u64() {
    CALICO_CHECK(pos_ + 8 <= k_.size());
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(k_[pos_++]);
    return v;
  }
  std::string_view fixed(size_t width) {
    CALICO_CHECK(pos_ + width <= k_.size());
    std::string_view s = k_.substr(pos_, width);
    pos_ += width;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view k_;
  size_t pos_ = 0;
};

// Primary keys.
inline std::string key_warehouse(uint32_t w) { return KeyWriter().u32(w).take(); }
inline std::string key_district(uint32_t w, uint32_t d) { return KeyWriter().u32(w).u32(d).take(); }
inline std::string key_customer(uint32_t w, uint32_t d, uint32_t c) { return KeyWriter().u32(w).u32(d).u32(c).take(); }
// History has no key in the spec: (origin, sequence), origin 0 for the loader and one per
// workload object (Database::new_history_origin), each with its own counter: every insert
// is unique.
inline std::string key_history(uint32_t origin, uint64_t seq) { return KeyWriter().u32(origin).u64(seq).take(); }
inline std::string key_new_order(uint32_t w, uint32_t d, uint32_t o) { return KeyWriter().u32(w).u32(d).u32(o).take(); }
inline std::string key_order(uint32_t w, uint32_t d, uint32_t o) { return KeyWriter().u32(w).u32(d).u32(o).take(); }
inline std::string key_order_line(uint32_t w, uint32_t d, uint32_t o, uint32_t number) {
  return KeyWriter().u32(w).u32(d).u32(o).u32(number).take();
}
inline std::string key_item(uint32_t i) { return KeyWriter().u32(i).take(); }
inline std::string key_stock(uint32_t w, uint32_t i) { return KeyWriter().u32(w).u32(i).take(); }

// Secondary keys. Customer by name: (w, d, last, first, c_id); c_id makes equal names unique
// and keeps them in the spec's order (by first name). Order by customer: (w, d, c_id, o_id).
inline std::string key_customer_name_prefix(uint32_t w, uint32_t d, std::string_view last) {
  return KeyWriter().u32(w).u32(d).fixed(last, kNameBytes).take();
}
inline std::string key_customer_name(uint32_t w, uint32_t d, std::string_view last, std::string_view first,
                                     uint32_t c) {
  return KeyWriter().u32(w).u32(d).fixed(last, kNameBytes).fixed(first, kNameBytes).u32(c).take();
}
inline constexpr size_t kCustomerNameKeyBytes = 4 + 4 + 2 * kNameBytes + 4;
inline std::string key_order_customer(uint32_t w, uint32_t d, uint32_t c, uint32_t o) {
  return KeyWriter().u32(w).u32(d).u32(c).u32(o).take();
}

// A zero-padded fixed field as a string without its padding.
inline std::string_view unpad(std::string_view s) {
  size_t n = s.find('\0');
  return n == std::string_view::npos ? s : s.substr(0, n);
}

}  // namespace calico::bench::tpcc
