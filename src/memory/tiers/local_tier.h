// LocalTier: the fast tier. Plain memory where the process runs, no charge, copies
// unthrottled (they still count in stats()).
#pragma once

#include <cstring>

#include "memory/tiers/memory_tier.h"

namespace calico::memory::tiers {

class LocalTier final : public MemoryTier {
 public:
  // Errors: those of validate(); config.kind must be kLocal.
  explicit LocalTier(const TierConfig& config);

  void place(void*, size_t) const override {}
  void copy(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    count_copy(n, 0);
  }
};

}  // namespace calico::memory::tiers
