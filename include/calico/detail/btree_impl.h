// The member definitions of calico/index/btree.h (src/index/btree/btree_impl.h), included at
// its end. Only calico/detail/ reaches into src/.
#pragma once

#include "index/btree/btree_impl.h"
