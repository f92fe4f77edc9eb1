// The member definitions of calico/index/id_map.h (src/index/id_map/id_map_impl.h), included
// at its end. Only calico/detail/ reaches into src/.
#pragma once

#include "index/id_map/id_map_impl.h"
