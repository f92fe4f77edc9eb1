// For the declaration of calico/index/hnsw.h: the page layout (src/index/hnsw/hnsw_layout.h)
// its private members name, and the vector kernels and results of its API (src/vector/).
// Only calico/detail/ reaches into src/.
#pragma once

#include "index/hnsw/hnsw_layout.h"
#include "vector/distance.h"
#include "vector/neighbor.h"
