// IdFilter: which ids a filtered vector search may return, as an allow-list bitmap over
// ids. One type for every index: BasicHnsw (as HnswFilter) and BasicIvf take it in their
// filtered search() overloads; the Python package builds the bitmap from an id array or a
// boolean mask (python/src/arrays.h, allow_list_of).
#pragma once

#include <cstdint>
#include <span>

namespace calico::vector {

// Bit id % 64 of allowed[id / 64] allows id; ids past the words are not allowed (so the
// words may stop after the largest allowed id). The words are borrowed: they must outlive
// the search and must not change while a search reads them. An empty span allows nothing.
struct IdFilter {
  std::span<const uint64_t> allowed;
  bool allows(uint32_t id) const { return id / 64 < allowed.size() && (allowed[id / 64] >> (id % 64) & 1) != 0; }
};

}  // namespace calico::vector
