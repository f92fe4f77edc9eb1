// DataDirectory: see data_dir.h.
#include "pool/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include "calico/error.h"
#include "pool/journal.h"
#include "pool/pool_support.h"

namespace calico::pool {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockFile = "LOCK";
// Files of Calico's own tools (the bench drivers' ".calico-bench" marker), tolerated beside a pool.
constexpr std::string_view kToolMarkerPrefix = ".calico";

// The space id of a file named space_<id>.dat, or 0.
SpaceId space_file_id(const std::string& name) {
  constexpr std::string_view kPrefix = "space_", kSuffix = ".dat";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) {
    return 0;
  }
  std::string_view digits(name.data() + kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  uint32_t id = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || p != digits.data() + digits.size() || (digits.size() > 1 && digits[0] == '0')) return 0;
  return id;
}

// Size in bytes of dir/name, or -1 with errno set.
int64_t file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

DataDirectory::DataDirectory(DataDirectory&& o) noexcept
    : lock_fd(std::exchange(o.lock_fd, -1)), catalog(std::move(o.catalog)), leftovers(std::move(o.leftovers)) {}

DataDirectory::~DataDirectory() {
  if (lock_fd >= 0) ::close(lock_fd);  // closing the last fd releases the flock
}

DataDirectory open_data_directory(const std::string& dir, size_t page_size) {
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw Error(ErrorCode::kIoError, "data directory " + dir + ": " + ec.message());
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    throw Error(ErrorCode::kInvalidArgument, "data directory " + dir + " exists and is not a directory");
  }
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::kIoError, "cannot create data directory " + dir + ": " + ec.message());
  }

  // What is there, before anything is created: space files by id, and anything unknown.
  std::map<SpaceId, std::string> space_files;
  std::string unknown;
  bool has_catalog = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == kCatalogFile) {
      has_catalog = true;
    } else if (SpaceId id = space_file_id(name); id != 0) {
      space_files[id] = name;
    } else if (name != kLockFile && name != kCatalogTempFile && name != kJournalFile &&
               !name.starts_with(kToolMarkerPrefix) &&
               unknown.empty()) {
      unknown = name;
    }
  }
  if (ec) throw Error(ErrorCode::kIoError, "cannot list data directory " + dir + ": " + ec.message());
  if (!has_catalog && !space_files.empty()) {
    throw Error(ErrorCode::kCorruptCatalog,
                dir + " holds " + std::to_string(space_files.size()) + " space file(s) (" +
                    space_files.begin()->second + "...) but no catalog: the catalog was lost; "
                    "refusing to start an empty pool over them");
  }
  if (!has_catalog && !unknown.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                dir + " is not empty and is not a Calico data directory (no catalog; it holds '" + unknown +
                    "'): refusing to use it");
  }

  // One pool per data directory: two would overwrite each other's pages.
  DataDirectory d;
  std::string lock_path = dir + "/" + kLockFile;
  d.lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (d.lock_fd < 0) {
    throw Error(ErrorCode::kIoError, "cannot open " + lock_path + ": " + std::strerror(errno));
  }
  if (::flock(d.lock_fd, LOCK_EX | LOCK_NB) != 0) {
    throw Error(ErrorCode::kIoError, "data directory " + dir + " is in use by another pool (" +
                                         std::strerror(errno) + ")");
  }

  // Under the lock: the catalog, and the files against it.
  d.catalog = read_catalog(dir);
  if (!d.catalog) {
    if (!space_files.empty()) throw Error(ErrorCode::kCorruptCatalog, dir + ": space files appeared without a catalog");
    return d;
  }
  const CatalogData& c = *d.catalog;
  if (c.page_size != page_size) {
    throw Error(ErrorCode::kPageSizeMismatch, dir + " was written with " + std::to_string(c.page_size) +
                                                  "-byte pages, not " + std::to_string(page_size));
  }
  for (const CatalogSpace& s : c.spaces) {
    std::string path = space_path(dir, s.id);
    // Only the file's existence is checked here: a file shorter than the count (truncated
    // by something else) still opens, and each missing page reads as kShortRead, so that
    // the rest of the data stays reachable (Corruption.TruncatedFileIsAShortRead).
    if (file_size(path) < 0) {
      throw Error(ErrorCode::kCorruptCatalog, "space '" + s.name + "' (" + path + ") is in the catalog but its file is " +
                                                  (errno == ENOENT ? "missing" : std::strerror(errno)));
    }
    space_files.erase(s.id);
  }
  for (const auto& [id, name] : space_files) {
    std::string path = dir + "/" + name;
    if (id < c.next_space_id || file_size(path) == 0) {
      d.leftovers.push_back(path);
    } else {
      throw Error(ErrorCode::kCorruptCatalog,
                  path + " is not in the catalog and its id is not below next_space_id " +
                      std::to_string(c.next_space_id) + ": the catalog lost a space");
    }
  }
  return d;
}

void remove_leftovers(const DataDirectory& d) {
  for (const std::string& path : d.leftovers) ::unlink(path.c_str());
}

}  // namespace calico::pool
