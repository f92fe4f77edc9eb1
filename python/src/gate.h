// Gate: the pool's open/closed state and the lock that keeps it open during an operation
// (the rules are in api.h). Use is the guard every operation takes first.
#pragma once

#include <shared_mutex>

#include "api.h"

namespace calico::py {

struct Gate {
  std::shared_mutex mu;
  bool closed = false;  // written only with mu held exclusive
};

// Holds the gate shared for its lifetime; throws ClosedError when the pool is closed.
class Use {
 public:
  explicit Use(Gate& g) : lock_(g.mu) {
    if (g.closed) throw ClosedError("the pool is closed");
  }

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

}  // namespace calico::py
