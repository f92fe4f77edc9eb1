// For the declaration of calico/index/btree.h: the B+tree's node formats and metadata page
// (src/index/btree/btree_node.h), named by its private members. Only calico/detail/ reaches
// into src/.
#pragma once

#include "index/btree/btree_node.h"
