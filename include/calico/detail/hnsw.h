// For the declaration of calico/index/hnsw.h: the page layout (src/index/hnsw/hnsw_layout.h)
// its private members name, and the vector kernels, results and search filter (IdFilter) of
// its API (src/vector/).
// Only calico/detail/ reaches into src/.
#pragma once

#include "index/hnsw/hnsw_layout.h"
#include "vector/distance.h"
#include "vector/id_filter.h"
#include "vector/neighbor.h"
