// TestPoints: moments inside the pool at which a test may pause a thread, to open a race
// window deterministically instead of hoping for an unlucky schedule (the concurrency tests
// of allocate and drop_space use them). Production code passes nullptr
// (PoolOptions::testing.test_points): one predictable branch on paths that are not the hot path.
#pragma once

#include "calico/page_id.h"

namespace calico::pool {

class TestPoints {
 public:
  enum class Point {
    kAllocateResolved,   // allocate(): the space resolved, its fault latch not yet taken
    kAllocateBlockRead,  // allocate(): num_blocks read as pid.block(), its entry not yet latched
    kPrefetchClaimed,    // prefetch_group(): pid's entry claimed (io pending), no frame taken
                         // yet; a test may throw here what taking the frame could throw
    // Sparse groups (array_sparse only; pool/features/sparse_groups.h):
    kFaultLookedUp,      // fault(): pid's entry looked up, its group reference not yet taken
    kFaultRefTaken,      // fault(): pid's group reference taken, its entry not yet latched
    kFaultClaimed,       // fault(): pid's entry claimed (0 -> loading), its owner not yet checked
    kGroupMoveLatched,   // a group move: the move flag set and every resident page of pid's
                         // group latched, nothing moved yet (pid: the group's first block)
    kGroupMoveInstall,   // a group move: pid's destination entry looked up (to the side table:
                         // inserted, perhaps recycled), its word not yet installed
  };
  virtual ~TestPoints() = default;
  // Called by the thread at `point`; may block it. `pid` is the page concerned, if any.
  virtual void at(Point point, PageId pid) = 0;
};

}  // namespace calico::pool
