// make_tier() and LocalTier: see memory_tier.h and local_tier.h.
#include "memory/tiers/memory_tier.h"

#include "calico/error.h"
#include "memory/tiers/emulated_far_tier.h"
#include "memory/tiers/local_tier.h"
#include "memory/tiers/numa_tier.h"

namespace calico::memory::tiers {
namespace {

const TierConfig& validated(const TierConfig& c) {
  validate(c, TierKind::kLocal);
  return c;
}

}  // namespace

LocalTier::LocalTier(const TierConfig& config) : MemoryTier(validated(config), 0, 0) {}

std::unique_ptr<MemoryTier> make_tier(const TierConfig& config) {
  validate(config);
  switch (config.kind) {
    case TierKind::kLocal: return std::make_unique<LocalTier>(config);
    case TierKind::kEmulated: return std::make_unique<EmulatedFarTier>(config, SpinDelay::calibrate());
    case TierKind::kNuma: return std::make_unique<NumaTier>(config);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown tier kind " + std::to_string(static_cast<int>(config.kind)));
}

}  // namespace calico::memory::tiers
