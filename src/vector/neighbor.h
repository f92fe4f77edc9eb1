// Neighbor: one search result, a vector id and its distance to the query ("smaller = closer",
// see distance.h). Results are ordered by (distance, id), so ties are broken by the smaller id
// and every ordering of equal results is the same.
#pragma once

#include <cstdint>

namespace calico::vector {

struct Neighbor {
  float distance;
  uint32_t id;
};

inline bool operator<(const Neighbor& a, const Neighbor& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
}

inline bool operator==(const Neighbor& a, const Neighbor& b) { return a.distance == b.distance && a.id == b.id; }

}  // namespace calico::vector
