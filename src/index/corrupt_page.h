// corrupt_page(kind, what, pid): the one way index code reports page bytes it cannot accept.
//
// Index pages can come from disk, so a header, an offset, a count or a pointer taken from a
// page is input, not an invariant: when a page that is pinned, latched, or whose optimistic
// read validated breaks its format, the index throws Error(kCorruptPage) naming the page
// ("<kind> <what> in page <space>:<block>"), and the pool stays usable. Bytes seen during an
// optimistic read that has not validated yet may be torn: they are never reported, only
// retried. CALICO_CHECK stays for what Calico's own code guarantees whatever the bytes.
#pragma once

#include <string>
#include <string_view>

#include "calico/error.h"
#include "calico/page_id.h"

namespace calico::index {

[[noreturn]] inline void corrupt_page(std::string_view kind, const std::string& what, PageId pid) {
  throw Error(ErrorCode::kCorruptPage,
              std::string(kind) + " " + what + " in page " + std::to_string(pid.space()) + ":" +
                  std::to_string(pid.block()),
              pid);
}

}  // namespace calico::index
