// For PoolOptions::tiers.far: a memory tier's configuration (src/memory/tiers/tier_config.h).
#pragma once

#include "memory/tiers/tier_config.h"
