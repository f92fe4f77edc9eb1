// Catalog: the file "catalog" in the data directory. It records the page size and the spaces
// with their durable block counts, so that a new process reopens them.
//
// Format 3 (text, one record per line, single spaces, decimal numbers, '\n' after each line):
//   calico-catalog 3
//   page_size <4096|8192|16384>
//   next_space_id <id>              space ids are never reused: every id below it was handed out
//   generation <n>                  the flushes committed (pool/journal.h); format 2 has no
//                                   such line and reads as generation 0
//   space <id> <blocks> <name>      zero or more; ids unique and below next_space_id; names unique
//   crc32c <8 hex digits>           CRC32C of every byte before this line; the last line
// Anything else (a missing or extra line, a truncation, a flipped byte, an unknown version) is
// kCorruptCatalog naming the file and line: the catalog is never guessed at.
//
// Durability: written whole to "catalog.tmp", fsynced, renamed over "catalog", and the directory
// fsynced, so a crash leaves either the old or the new catalog, never a torn one. A space's
// <blocks> is its count as of the last flush that synced it (pool/README.md, rule 6): a crash
// forgets the blocks allocated after that flush, and a reopened pool never reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calico/page_id.h"

namespace calico::pool {

inline constexpr const char* kCatalogFile = "catalog";
inline constexpr const char* kCatalogTempFile = "catalog.tmp";
inline constexpr size_t kMaxCatalogBytes = size_t{64} << 20;  // ~700K spaces; larger is corrupt

struct CatalogSpace {
  SpaceId id;
  uint64_t blocks;
  std::string name;
};

struct CatalogData {
  size_t page_size = 0;
  SpaceId next_space_id = 1;
  uint64_t generation = 0;  // flushes committed with the rollback journal (pool/journal.h)
  std::vector<CatalogSpace> spaces;
};

// The bytes of a catalog file for `data` (format 2, checksummed).
std::string format_catalog(const CatalogData& data);
// Parses a whole catalog file's bytes; `path` names it in errors. Errors: kCorruptCatalog.
CatalogData parse_catalog(std::string_view bytes, const std::string& path);
// Reads dir/catalog; nullopt when it does not exist. Errors: kCorruptCatalog, kIoError.
std::optional<CatalogData> read_catalog(const std::string& dir);
// Replaces dir/catalog atomically (see above). Errors: kIoError (nothing is changed then, or
// the old catalog stays whole).
void write_catalog(const std::string& dir, const CatalogData& data);
// True when `name` is a valid space name: 1..64 characters of [A-Za-z0-9_.-].
bool valid_space_name(std::string_view name);

}  // namespace calico::pool
