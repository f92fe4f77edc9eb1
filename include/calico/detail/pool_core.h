// For the inline API of calico/buffer_pool.h: the pool's implementation class with its
// inline hot paths (src/pool/access.h includes src/pool/pool_core.h and the features the
// hot paths call).
#pragma once

#include "pool/access.h"
