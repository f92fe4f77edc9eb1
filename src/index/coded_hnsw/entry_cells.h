// The entry sample's cells (BasicCodedHnsw): a partition of the sample around leaders, so
// that a search scores the entries of the cells nearest the query, not the whole sample.
// The sample is the flat graph's substitute for HNSW's upper levels (about 1 node in
// entry_rate); at 1M rows it holds 15,600 entries, and scoring all of them cost a search
// about 0.2 ms, where DiskANN starts from one node (docs/results/vector_coded.md). The cells
// are the coarse step of IVF applied to the sample: the leaders' exact distances to the
// query rank the cells, and the entries of the nearest cells, a quarter of the sample by
// default, are scored on their codes.
//
// The leaders are sampled nodes' vectors (read from their rows when the partition is
// built); a leader is a point, so it stays valid when its node is removed or freed. An
// entry's cell is its nearest leader: by code estimate when the partition is built (every
// entry at once: prepare the leader, estimate the sample's codes), by exact distance when
// add() samples a node (its vector is at hand). Either is only a grouping: a search that
// probes the wrong cells finds worse starts, never a wrong answer.
//
// The sample is kept ordered by cell, so that a search scores a cell's entries in place, in
// one pass over their codes (gathering them one by one cost 2-3x as much per entry): the
// first `sorted` entries are in cell order, cell c's at [start[c], start[c + 1]); the ones
// add() pushed since (the tail) follow in add order, and sort() orders them in once the
// tail outgrows a quarter of the ordered part.
//
// Invariants (BasicCodedHnsw::check_structure), under Shared::entries_mutex:
// cell_of.size() == the sample's size, and entries[i] is in cell cell_of[i] < cells();
// sizes[c] is the number of entries in cell c; leaders.size() == cells() * dim;
// sorted <= the sample's size, cell_of[0 .. sorted) is ascending and start[c] is the
// first index of cell c in it (start[cells()] == sorted).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico::index::coded_detail {

struct EntryCells {
  // A sample smaller than this is scored whole (at 100K rows, 1,560 entries cost ~20 us).
  static constexpr size_t kMinEntries = 4096;
  // The partition is rebuilt (more cells) when the sample has grown this many times.
  static constexpr size_t kRegrowth = 4;
  // Searches with automatic entries score the nearest cells holding this share of the
  // sample (1 / kProbeShare): at 1M rows a quarter gave the recall of the whole sample, an
  // eighth about 0.01 less at the same ef (docs/results/vector_coded.md).
  static constexpr size_t kProbeShare = 4;
  // sort() once the tail holds more than the ordered part / kTailShare (and kMinTail).
  static constexpr size_t kTailShare = 4, kMinTail = 256;
  static constexpr uint32_t kMaxCells = 4096;

  uint32_t dim = 0;
  std::vector<float> leaders;     // cells() x dim
  std::vector<uint16_t> cell_of;  // the cell of Shared::entries[i]
  std::vector<uint32_t> sizes;    // entries per cell
  std::vector<uint32_t> start;    // cells() + 1 offsets into the ordered part
  size_t sorted = 0;              // entries in cell order (the rest: the tail)
  size_t built_at = 0;            // the sample's size when the leaders were chosen

  // Cells for a sample of n entries: about sqrt(n), so that ranking the leaders costs about
  // what scoring one cell does.
  static uint32_t cells_for(size_t n) {
    const auto c = static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(n))));
    return std::clamp<uint32_t>(c, 16, kMaxCells);
  }
  // Whether a sample of n entries wants a (new) partition.
  static bool wanted(const EntryCells* cells, size_t n) {
    return n >= kMinEntries && (cells == nullptr || n >= kRegrowth * cells->built_at);
  }
  // Upper bound of the resident bytes for a sample of n entries (the budget's part).
  static uint64_t bytes_for(uint64_t n, uint32_t dim) {
    if (n < kMinEntries) return 0;
    const uint64_t c = cells_for(n);
    return c * (uint64_t{dim} * sizeof(float) + sizeof(uint32_t)) + n * sizeof(uint16_t);
  }

  uint32_t cells() const { return static_cast<uint32_t>(sizes.size()); }
  const float* leader(uint32_t c) const { return leaders.data() + size_t{c} * dim; }
  uint64_t bytes() const {
    return leaders.capacity() * sizeof(float) + cell_of.capacity() * sizeof(uint16_t) +
           (sizes.capacity() + start.capacity()) * sizeof(uint32_t);
  }
  bool tail_too_long() const {
    const size_t tail = cell_of.size() - sorted;
    return tail > kMinTail && tail > sorted / kTailShare;
  }

  // The cell whose leader is nearest to v.
  uint32_t nearest(const float* v, vector::DistanceFn dist) const {
    uint32_t best = 0;
    float best_d = dist(v, leader(0), dim);
    for (uint32_t c = 1; c < cells(); ++c) {
      const float d = dist(v, leader(c), dim);
      if (d < best_d) best_d = d, best = c;
    }
    return best;
  }
  void push(uint32_t cell) {
    cell_of.push_back(static_cast<uint16_t>(cell));
    ++sizes[cell];
  }

  // Orders the whole sample by cell (stable: a counting sort), its ids and codes (code_bytes
  // each) with it. O(sample): at 1M rows about 690 KB of codes moved.
  void sort(std::vector<uint32_t>& ids, std::vector<uint8_t>& codes, size_t code_bytes) {
    const size_t n = cell_of.size();
    std::vector<uint32_t> at(cells() + 1, 0);
    for (uint32_t c = 0; c < cells(); ++c) at[c + 1] = at[c] + sizes[c];
    std::vector<uint32_t> new_ids(n);
    std::vector<uint8_t> new_codes(codes.size());
    std::vector<uint16_t> new_cells(n);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t to = at[cell_of[i]]++;
      new_ids[to] = ids[i];
      new_cells[to] = cell_of[i];
      std::memcpy(new_codes.data() + size_t{to} * code_bytes, codes.data() + i * code_bytes, code_bytes);
    }
    ids.swap(new_ids);
    codes.swap(new_codes);
    cell_of.swap(new_cells);
    sorted = n;
    index_runs();
  }
  // start[] from cell_of[0 .. sorted) (after sort(), or a compaction that kept the order).
  void index_runs() {
    start.assign(cells() + 1, 0);
    for (size_t i = 0; i < sorted; ++i) ++start[cell_of[i] + 1];
    for (uint32_t c = 0; c < cells(); ++c) start[c + 1] += start[c];
  }

  // The cells nearest q (by their leaders) that together hold at least `want` entries (all
  // cells when the sample holds fewer): returns their number p; order[0 .. p) names them,
  // nearest first, and marks[c] is 1 for them and 0 for the others.
  uint32_t probe(const float* q, vector::DistanceFn dist, size_t want, std::vector<vector::Neighbor>& order,
                 std::vector<uint8_t>& marks) const {
    const uint32_t n = cells();
    order.resize(n);
    for (uint32_t c = 0; c < n; ++c) order[c] = vector::Neighbor{dist(q, leader(c), dim), c};
    std::sort(order.begin(), order.end());
    marks.assign(n, 0);
    size_t covered = 0;
    uint32_t p = 0;
    for (; p < n && covered < want; ++p) {
      marks[order[p].id] = 1;
      covered += sizes[order[p].id];
    }
    return p;
  }
};

}  // namespace calico::index::coded_detail
