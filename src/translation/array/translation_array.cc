// TranslationArray: see translation_array.h.
#include "translation/array/translation_array.h"

#include <string>

#include "calico/error.h"

namespace calico::translation {

static_assert(sizeof(Entry) == 8 && sizeof(PunchCounter) == 4);

TranslationArray::TranslationArray(uint64_t capacity) : capacity_(capacity) {
  if (capacity == 0 || capacity > (uint64_t{1} << 32)) {
    throw Error(ErrorCode::kInvalidArgument,
                "space capacity " + std::to_string(capacity) + " blocks is not in 1 .. 2^32");
  }
  entry_region_ = memory::VirtualRegion::reserve(capacity * sizeof(Entry));
  uint64_t groups = (capacity + kEntriesPerGroup - 1) / kEntriesPerGroup;
  counter_region_ = memory::VirtualRegion::reserve(groups * sizeof(PunchCounter));
  entries_ = reinterpret_cast<Entry*>(entry_region_.data());
  counters_ = reinterpret_cast<PunchCounter*>(counter_region_.data());
}

bool TranslationArray::release_ref(BlockId block) {
  // Count 0 under the punch lock: every entry of the group is zero (invariant I1).
  return release_punch_ref(counter(block), [&] { punch_group(block); });
}

void TranslationArray::punch_group(BlockId block) {
  if constexpr (CALICO_PARANOID) {
    for (size_t i = 0; i < kEntriesPerGroup; ++i) {
      CALICO_CHECK(entries_[block / kEntriesPerGroup * kEntriesPerGroup + i].load() == 0);
    }
  }
  entry_region_.punch(static_cast<size_t>(block / kEntriesPerGroup) * memory::kOsPageBytes, memory::kOsPageBytes);
}

void TranslationArray::reset() {
  entry_region_.reset();
  counter_region_.reset();
}

size_t TranslationArray::counter_bytes(uint64_t limit_blocks) const {
  return (limit_blocks + kEntriesPerGroup - 1) / kEntriesPerGroup * sizeof(PunchCounter);
}

size_t TranslationArray::private_bytes(uint64_t limit_blocks) const {
  return entry_region_.private_bytes(0, limit_blocks * sizeof(Entry)) +
         counter_region_.private_bytes(0, counter_bytes(limit_blocks));
}

size_t TranslationArray::mincore_bytes(uint64_t limit_blocks) const {
  return entry_region_.resident_bytes(0, limit_blocks * sizeof(Entry)) +
         counter_region_.resident_bytes(0, counter_bytes(limit_blocks));
}

}  // namespace calico::translation
