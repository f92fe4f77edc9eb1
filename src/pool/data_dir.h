// DataDirectory: what a pool finds in its data directory before it opens, checked without
// changing anything on disk.
//
// Layout of a data directory:
//   LOCK             flock()ed exclusively by the one pool that has the directory open
//   catalog          page size, spaces and their durable block counts (catalog.h)
//   catalog.tmp      a catalog being written (ignored; replaced by the next write)
//   journal          the rollback journal of the flush epoch in progress (journal.h): page
//                    images written back by the next open after a crash
//   space_<id>.dat   one file of pages per space
//   .calico*         markers of Calico's own tools (bench/common/data_dir.h), ignored
//
// Rules (a failed open changes nothing on disk; a successful one never starts empty over data):
//  - A directory without a catalog is a new pool only when it holds nothing but LOCK,
//    catalog.tmp (a crash during the very first open) and tool markers. Space files without a catalog are a lost
//    catalog: kCorruptCatalog. Any other file: kInvalidArgument (not a Calico directory).
//  - With a catalog: every space it names must have its file (kCorruptCatalog otherwise); a
//    file shorter than <blocks> pages still opens, and its missing pages read as kShortRead. A space file the catalog does not name is a leftover of an
//    interrupted create_space (empty file) or drop_space (id below next_space_id, the catalog
//    written before the file is unlinked): it is removed once the open has succeeded. Any other
//    unnamed space file means the catalog lost a space: kCorruptCatalog.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pool/catalog.h"

namespace calico::pool {

struct DataDirectory {
  DataDirectory() = default;
  DataDirectory(DataDirectory&& o) noexcept;
  DataDirectory& operator=(DataDirectory&&) = delete;
  ~DataDirectory();  // releases the lock if still held

  int lock_fd = -1;                     // LOCK, flock()ed; the pool takes it over
  std::optional<CatalogData> catalog;   // nullopt: a new pool
  std::vector<std::string> leftovers;   // space files to remove after a successful open
};

// Creates `dir` if missing, takes its lock and reads and checks the catalog against the files
// (the rules above) and against `page_size`. Writes nothing else. Errors: kInvalidArgument,
// kIoError (also: in use by another pool), kCorruptCatalog, kPageSizeMismatch.
DataDirectory open_data_directory(const std::string& dir, size_t page_size);

// Removes the leftovers found by open_data_directory (best effort: a file that cannot be
// removed is harmless and is found again next time).
void remove_leftovers(const DataDirectory& d);

}  // namespace calico::pool
