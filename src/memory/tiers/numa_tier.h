// NumaTier: a far tier that is real memory of another NUMA node (a second socket, or a CXL
// expander in system-RAM mode, which Linux shows as a CPU-less node). place() binds the
// frames to the node with mbind(MPOL_BIND); accesses and copies are not charged (the
// hardware charges them).
#pragma once

#include <cstring>

#include "memory/tiers/memory_tier.h"

namespace calico::memory::tiers {

class NumaTier final : public MemoryTier {
 public:
  // Errors: those of validate(), among them kInvalidArgument naming config.numa_node when
  // the node does not exist or has no memory; config.kind must be kNuma.
  explicit NumaTier(const TierConfig& config);

  int node() const { return config().numa_node; }

  // bind_to_node(base, bytes, node()).
  void place(void* base, size_t bytes) const override;
  void copy(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    count_copy(n, 0);
  }
};

}  // namespace calico::memory::tiers
