// Checks of a batch of vectors before an index sees any of it, so that a batch with a bad
// row changes nothing (calico::Error kInvalidArgument naming the row).
#pragma once

#include <algorithm>
#include <string>

#include "api.h"
#include "calico/error.h"
#include "vector/distance.h"

namespace calico::py {

inline vector::Metric to_metric(MetricName m) {
  switch (m) {
    case MetricName::kL2: return vector::Metric::kL2;
    case MetricName::kIp: return vector::Metric::kInnerProduct;
    case MetricName::kCos: return vector::Metric::kCosine;
  }
  return vector::Metric::kL2;
}

inline MetricName from_metric(vector::Metric m) {
  switch (m) {
    case vector::Metric::kL2: return MetricName::kL2;
    case vector::Metric::kInnerProduct: return MetricName::kIp;
    case vector::Metric::kCosine: return MetricName::kCos;
  }
  return MetricName::kL2;
}

inline void check_rows(const VectorBatch& v, uint32_t dim, vector::Metric metric, const char* what) {
  for (uint64_t i = 0; i < v.rows; ++i) {
    const float* r = v.data + i * dim;
    if (!vector::all_finite(r, dim)) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": row " + std::to_string(i) +
                                                   " holds NaN or infinity");
    }
    if (metric == vector::Metric::kCosine && std::all_of(r, r + dim, [](float x) { return x == 0; })) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": row " + std::to_string(i) +
                                                   " is zero (no cosine distance)");
    }
  }
}

}  // namespace calico::py
