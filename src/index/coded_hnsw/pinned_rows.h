// Copies of hot node rows kept in memory (BasicCodedHnsw::pin_rows): a search that expands a
// pinned node takes its list and vector from here and reads no page. The rows chosen are the
// ones sample searches expanded most often (DiskANN keeps such a cache of nodes, chosen
// breadth-first from its start node or from sample queries). A pool caches whole pages, most
// of whose rows no search needs; this caches rows, so the same memory holds several times
// more of the nodes every search passes through (docs/results/vector_coded.md).
//
// Immutable once built: readers use it without synchronisation while they hold the index's
// codes_mutex shared (BasicCodedHnsw replaces it only under codes_mutex exclusive).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace calico::index::coded_detail {

class PinnedRows {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  PinnedRows(uint32_t max_links, uint32_t dim) : max_links_(max_links), dim_(dim) {}

  // Memory one row takes here: its list, its vector, and about one entry of the slot index.
  static uint64_t bytes_per_row(uint32_t max_links, uint32_t dim) {
    return 4 * (1 + uint64_t{max_links}) + 4 * uint64_t{dim} + 2 * (sizeof(uint32_t) * 2 + 1);
  }
  void reserve(uint32_t rows) {
    index_.reserve(rows);
    links_.reserve(size_t{rows} * (1 + max_links_));
    vectors_.reserve(size_t{rows} * dim_);
  }
  // Appends slot's row: links[0 .. n) (n <= max_links) and vec[0 .. dim). Pre: slot not added.
  void add(uint32_t slot, const uint32_t* links, uint32_t n, const float* vec) {
    index_.emplace(slot, static_cast<uint32_t>(index_.size()));
    links_.push_back(n);
    links_.insert(links_.end(), links, links + n);
    links_.resize(links_.size() + (max_links_ - n), 0);
    vectors_.insert(vectors_.end(), vec, vec + dim_);
  }

  // slot's row, or kNone.
  uint32_t find(uint32_t slot) const {
    const auto it = index_.find(slot);
    return it == index_.end() ? kNone : it->second;
  }
  uint32_t count(uint32_t row) const { return links_[size_t{row} * (1 + max_links_)]; }
  const uint32_t* links(uint32_t row) const { return links_.data() + size_t{row} * (1 + max_links_) + 1; }
  const float* vector(uint32_t row) const { return vectors_.data() + size_t{row} * dim_; }

  uint32_t size() const { return static_cast<uint32_t>(index_.size()); }
  uint64_t bytes() const {
    return links_.capacity() * 4 + vectors_.capacity() * 4 + index_.capacity() * (sizeof(uint32_t) * 2 + 1);
  }

 private:
  uint32_t max_links_, dim_;
  absl::flat_hash_map<uint32_t, uint32_t> index_;  // slot -> row
  std::vector<uint32_t> links_;                    // rows x {count, ids[max_links]}
  std::vector<float> vectors_;                     // rows x dim
};

}  // namespace calico::index::coded_detail
