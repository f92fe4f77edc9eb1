// The member definitions of calico/index/coded_hnsw.h (src/index/coded_hnsw/coded_hnsw_impl.h),
// included at its end. Only calico/detail/ reaches into src/.
#pragma once

#include "index/coded_hnsw/coded_hnsw_impl.h"
