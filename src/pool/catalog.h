// Catalog: the file "catalog" in the data directory, which records the page size and the
// spaces, so that a new process reopens them.
//
// Format (text, one record per line):
//   calico-catalog 1
//   page_size <bytes>
//   next_space_id <id>
//   space <id> <blocks> <name>
// Written whole to "catalog.tmp", fsynced, renamed over "catalog", and the directory fsynced,
// so a crash leaves either the old or the new catalog, never a torn one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calico/page_id.h"

namespace calico::pool {

struct CatalogSpace {
  SpaceId id;
  uint64_t blocks;
  std::string name;
};

struct CatalogData {
  size_t page_size = 0;
  SpaceId next_space_id = 1;
  std::vector<CatalogSpace> spaces;
};

// Reads dir/catalog; nullopt when it does not exist. Errors: kCorruptCatalog, kIoError.
std::optional<CatalogData> read_catalog(const std::string& dir);
// Replaces dir/catalog atomically (see above). Errors: kIoError.
void write_catalog(const std::string& dir, const CatalogData& data);
// True when `name` is a valid space name: 1..64 characters of [A-Za-z0-9_.-].
bool valid_space_name(const std::string& name);

}  // namespace calico::pool
