// A benchmark's data directories: a driver deletes only what it created.
//
// Entry points:
//   prepare_bench_dir(dir, extra)   makes dir an empty directory marked as the bench's
//   remove_bench_dir(dir, extra)    removes a directory that prepare_bench_dir made
//   is_bench_dir(dir)               true when dir carries the marker
//
// The marker is the file `.calico-bench` whose first line is kBenchDirMagic, written when a
// driver creates the directory (or takes an empty one). A directory is the bench's when it
// carries the marker and holds nothing but what the bench puts there: the marker, a Calico
// pool's files (catalog, catalog.tmp, journal, LOCK, space_<n>.dat) and the names in `extra` (a
// driver's own entries, e.g. ycsb's "db", vector's "built.json"). prepare_bench_dir:
//   - a missing directory is created (with its parents) and marked; an empty one is marked;
//   - a bench directory is emptied but for its marker (the previous run's data);
//   - anything else is refused with BenchDirError and left untouched: a path that is not a
//     directory, a non-empty directory without the marker (even one holding a Calico
//     catalog: it may be a user's pool), a marked directory holding anything else.
// remove_bench_dir removes only a bench directory; anything else is left and reported
// (false). Errors also carry the file system's message.
#pragma once

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace calico::bench {

inline constexpr std::string_view kBenchDirMarker = ".calico-bench";
inline constexpr std::string_view kBenchDirMagic = "calico-bench data directory v1: deleted by the next run";

// A data directory the driver refuses to touch (the command line exits non-zero with it).
class BenchDirError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline bool is_bench_dir(const std::filesystem::path& dir) {
  std::ifstream in(dir / kBenchDirMarker);
  std::string line;
  return in && std::getline(in, line) && line == kBenchDirMagic;
}

namespace data_dir_detail {

// A name a Calico pool creates in its data directory (src/pool/data_dir.h: catalog, the
// rollback journal, LOCK, space files).
inline bool pool_file(const std::string& name) {
  if (name == "catalog" || name == "catalog.tmp" || name == "journal" || name == "LOCK") return true;
  constexpr std::string_view kPrefix = "space_", kSuffix = ".dat";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) {
    return false;
  }
  for (size_t i = kPrefix.size(); i < name.size() - kSuffix.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

// The first entry of dir that the bench did not create, or "" when there is none.
inline std::string foreign_entry(const std::filesystem::path& dir, std::initializer_list<std::string_view> extra) {
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    bool ours = name == kBenchDirMarker || pool_file(name);
    for (std::string_view x : extra) ours = ours || name == x;
    if (!ours) return name;
  }
  return "";
}

inline void mark(const std::filesystem::path& dir) {
  std::ofstream out(dir / kBenchDirMarker);
  out << kBenchDirMagic << "\n";
  if (!out.flush()) throw BenchDirError("cannot write " + (dir / kBenchDirMarker).string());
}

}  // namespace data_dir_detail

inline void prepare_bench_dir(const std::string& dir, std::initializer_list<std::string_view> extra = {}) {
  namespace fs = std::filesystem;
  const fs::path p(dir);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw BenchDirError("cannot inspect data directory " + dir + ": " + ec.message());
  }
  if (!fs::exists(st)) {
    fs::create_directories(p, ec);
    if (ec) throw BenchDirError("cannot create data directory " + dir + ": " + ec.message());
    data_dir_detail::mark(p);
    return;
  }
  if (!fs::is_directory(st)) {
    throw BenchDirError("data directory " + dir + " exists and is not a directory; refusing to use it");
  }
  if (fs::is_empty(p)) {
    data_dir_detail::mark(p);
    return;
  }
  if (!is_bench_dir(p)) {
    throw BenchDirError("data directory " + dir + " is not empty and was not created by calico_bench (no " +
                        std::string(kBenchDirMarker) + " marker); refusing to delete its contents: choose a new "
                        "or empty directory");
  }
  if (std::string other = data_dir_detail::foreign_entry(p, extra); !other.empty()) {
    throw BenchDirError("data directory " + dir + " holds '" + other +
                        "', which calico_bench did not create; refusing to delete it");
  }
  for (const fs::directory_entry& e : fs::directory_iterator(p)) {
    if (e.path().filename() != kBenchDirMarker) fs::remove_all(e.path());
  }
}

inline bool remove_bench_dir(const std::string& dir, std::initializer_list<std::string_view> extra = {}) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec)) || !is_bench_dir(dir) ||
      !data_dir_detail::foreign_entry(dir, extra).empty()) {
    return false;
  }
  fs::remove_all(dir, ec);
  return !ec;
}

}  // namespace calico::bench
