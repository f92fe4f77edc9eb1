// For the declaration of calico/index/id_map.h: the id map's page format
// (src/index/id_map/id_map_layout.h). Only calico/detail/ reaches into src/.
#pragma once

#include "index/id_map/id_map_layout.h"
