// The member definitions of calico/index/hnsw.h (src/index/hnsw/hnsw_impl.h), included at its
// end. Only calico/detail/ reaches into src/.
#pragma once

#include "index/hnsw/hnsw_impl.h"
