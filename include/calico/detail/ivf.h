// For the declaration of calico/index/ivf.h: the format (src/index/ivf/ivf_layout.h: IvfFormat
// and the metadata the object keeps), and the vector kernels, coarse ranker, results and search
// filter (IdFilter) of its API (src/vector/). Only calico/detail/ reaches into src/.
#pragma once

#include "index/ivf/ivf_layout.h"
#include "vector/coarse.h"
#include "vector/distance.h"
#include "vector/id_filter.h"
#include "vector/neighbor.h"
