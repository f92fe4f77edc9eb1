// Fuzz target: the catalog parser (pool/catalog.h). Arbitrary bytes parse or give
// kCorruptCatalog naming the file (any other code, or a message without the path, is a
// finding); what parses formats back to bytes that parse to the same catalog.
#include <cstdlib>
#include <string>

#include "fuzz_harness.h"
#include "pool/catalog.h"

namespace {

void fuzz_catalog(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  calico::pool::CatalogData c;
  try {
    c = calico::pool::parse_catalog(bytes, "fuzz/catalog");
  } catch (const calico::Error& e) {
    if (std::string_view(e.what()).find("fuzz/catalog") == std::string_view::npos) {
      std::fprintf(stderr, "fuzz finding: the catalog error does not name the file: %s\n", e.what());
      std::abort();
    }
    throw;
  }
  calico::pool::CatalogData again = calico::pool::parse_catalog(calico::pool::format_catalog(c), "fuzz/again");
  bool same = again.page_size == c.page_size && again.next_space_id == c.next_space_id &&
              again.spaces.size() == c.spaces.size();
  for (size_t i = 0; same && i < c.spaces.size(); ++i) {
    same = again.spaces[i].id == c.spaces[i].id && again.spaces[i].blocks == c.spaces[i].blocks &&
           again.spaces[i].name == c.spaces[i].name;
  }
  if (!same) std::abort();  // a finding: format and parse disagree
}

}  // namespace

CALICO_FUZZ_BYTES_TARGET(fuzz_catalog, ::calico::ErrorCode::kCorruptCatalog)
