// The member definitions of calico/index/mapped_index.h (src/index/id_map/mapped_index_impl.h),
// included at its end. Only calico/detail/ reaches into src/.
#pragma once

#include "index/id_map/mapped_index_impl.h"
