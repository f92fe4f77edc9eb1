// Every definition of PoolCore<T> and BasicBufferPool<T>: included only by the translation
// units that instantiate a pool (generated from cmake/variants.cmake), one per variant group.
#pragma once

#include "calico/buffer_pool.h"
#include "pool/access.h"
#include "pool/eviction.h"
#include "pool/fault.h"
#include "pool/features/frame_hints.h"
#include "pool/features/promotion.h"
#include "pool/features/sparse_groups.h"
#include "pool/features/tier_moves.h"
#include "pool/flush.h"
#include "pool/open_close.h"
#include "pool/prefetch.h"
#include "pool/spaces.h"
#include "pool/stats_invariants.h"
