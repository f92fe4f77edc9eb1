// For the declaration of calico/index/coded_hnsw.h: the page format
// (src/index/coded_hnsw/coded_hnsw_layout.h), the pinned rows (pinned_rows.h) and the entry
// sample's cells (entry_cells.h) its private members name, and the quantiser
// interface, vector kernels and results of its API (src/vector/).
// Only calico/detail/ reaches into src/.
#pragma once

#include "index/coded_hnsw/coded_hnsw_layout.h"
#include "index/coded_hnsw/entry_cells.h"
#include "index/coded_hnsw/pinned_rows.h"
#include "vector/distance.h"
#include "vector/id_filter.h"
#include "vector/neighbor.h"
#include "vector/quantizer.h"
