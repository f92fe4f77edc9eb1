// PoolHandle: the Python Pool object (a shared_ptr to the type-erased pool, api.h). Index
// objects take one to open themselves on its pool.
#pragma once

#include <memory>
#include <string>

#include "api.h"

namespace calico::py {

struct PoolHandle {
  std::shared_ptr<PoolApi> api;
  std::string path;
};

MetricName parse_metric(const std::string& name);  // bind_vectors.cc; "l2" | "ip" | "cos"
const char* metric_name(MetricName m);

}  // namespace calico::py
