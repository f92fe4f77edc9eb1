// Neighbor: one result of a vector search, a (distance, id) pair. Every index (HNSW, IVF)
// and the exact ground truth return results as Neighbor, sorted ascending by operator<,
// which orders by distance and breaks ties by id, so that result lists are deterministic.
// Distances are the kernels' "smaller = closer" values (distance.h).
#pragma once

#include <cstdint>

namespace calico::vector {

struct Neighbor {
  float distance;
  uint32_t id;

  friend bool operator<(const Neighbor& a, const Neighbor& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  }
  friend bool operator>(const Neighbor& a, const Neighbor& b) { return b < a; }
  friend bool operator==(const Neighbor& a, const Neighbor& b) = default;
};
static_assert(sizeof(Neighbor) == 8);

}  // namespace calico::vector
