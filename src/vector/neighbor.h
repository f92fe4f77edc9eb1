// Neighbor: one search result (a distance and a row id), shared by HNSW, IVF and the
// exact ground truth. Ordered by (distance, id): search results are sorted ascending, and
// equal distances break ties by the smaller id, so that every search is deterministic.
#pragma once

#include <cstdint>

namespace calico::vector {

struct Neighbor {
  float distance;
  uint32_t id;

  friend bool operator<(const Neighbor& a, const Neighbor& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  }
  friend bool operator==(const Neighbor& a, const Neighbor& b) { return a.distance == b.distance && a.id == b.id; }
};

}  // namespace calico::vector
