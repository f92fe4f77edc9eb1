// For PoolOptions::far_tier: a memory tier's configuration (src/memory/tiers/tier_config.h).
#pragma once

#include "memory/tiers/tier_config.h"
