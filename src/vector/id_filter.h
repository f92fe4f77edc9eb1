// IdFilter: which ids a filtered vector search may return, as an allow-list bitmap over
// ids. One type for every index: BasicHnsw (as HnswFilter) and BasicIvf take it in their
// filtered search() overloads; the Python package builds the bitmap from an id array or a
// boolean mask (python/src/arrays.h, allow_list_of).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace calico::vector {

// Bit id % 64 of allowed[id / 64] allows id; ids past the words are not allowed (so the
// words may stop after the largest allowed id). The words are borrowed: they must outlive
// the search and must not change while a search reads them. An empty span allows nothing.
struct IdFilter {
  std::span<const uint64_t> allowed;
  bool allows(uint32_t id) const { return id / 64 < allowed.size() && (allowed[id / 64] >> (id % 64) & 1) != 0; }
  // How many ids below `end` it allows (bits past `end` in the last word do not count).
  uint64_t count_below(uint64_t end) const {
    const size_t words = static_cast<size_t>(std::min<uint64_t>(allowed.size(), (end + 63) / 64));
    uint64_t n = 0;
    for (size_t w = 0; w < words; ++w) {
      const uint64_t past = (w + 1) * 64 > end ? (w + 1) * 64 - end : 0;  // top bits: ids >= end
      n += static_cast<uint64_t>(std::popcount(allowed[w] << past));
    }
    return n;
  }
};

}  // namespace calico::vector
