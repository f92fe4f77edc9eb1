// The member definitions of calico/index/ivf.h (src/index/ivf/ivf_impl.h), included at its end.
// Only calico/detail/ reaches into src/.
#pragma once

#include "index/ivf/ivf_impl.h"
