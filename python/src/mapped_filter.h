// The search filter of a call (SearchKnobs: an allow-list of ids, labels, or both) as the
// id map's slot bitmap (index::SlotFilter, calico/index/mapped_index.h), and the refusal of
// labels where there is no id map (the 'direct' translation).
#pragma once

#include <optional>
#include <string>

#include "api.h"
#include "calico/error.h"
#include "calico/index/mapped_index.h"

namespace calico::py {

// None when knobs ask for no filter; else the filter of both conditions that are given.
// The filter holds a read section while it lives: build it once per call.
template <class Mapped>
std::optional<index::SlotFilter> slot_filter_of(const Mapped& m, const SearchKnobs& knobs) {
  std::optional<index::SlotFilter> f;
  if (knobs.allowed_ids && knobs.labels) {
    f.emplace(m.filter(*knobs.allowed_ids, *knobs.labels));
  } else if (knobs.labels) {
    f.emplace(m.filter_labels(*knobs.labels));
  } else if (knobs.allowed_ids) {
    f.emplace(m.filter(*knobs.allowed_ids));
  }
  return f;
}

// Labels live in the id map, which an index on 'direct' does not have.
[[noreturn]] inline void no_labels(const char* what) {
  throw Error(ErrorCode::kInvalidArgument, std::string(what) +
                                               ": labels need the id map, which an index on the 'direct' translation "
                                               "does not have (use another translation)");
}

}  // namespace calico::py
