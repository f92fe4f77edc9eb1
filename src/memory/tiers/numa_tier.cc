// NumaTier: see numa_tier.h.
#include "memory/tiers/numa_tier.h"

#include "memory/tiers/numa_binding.h"

namespace calico::memory::tiers {
namespace {

const TierConfig& validated(const TierConfig& c) {
  validate(c, TierKind::kNuma);
  return c;
}

}  // namespace

NumaTier::NumaTier(const TierConfig& config) : MemoryTier(validated(config), 0, 0) {}

void NumaTier::place(void* base, size_t bytes) const { bind_to_node(base, bytes, node()); }

}  // namespace calico::memory::tiers
