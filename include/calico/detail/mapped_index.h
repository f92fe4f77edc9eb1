// For the declaration of calico/index/mapped_index.h: the indexes' adapters
// (src/index/id_map/mapped_cores.h) and the read sections of upserts
// (src/index/id_map/read_sections.h). Only calico/detail/ reaches into src/.
#pragma once

#include "index/id_map/mapped_cores.h"
#include "index/id_map/read_sections.h"
