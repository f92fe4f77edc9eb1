// prepare_data_dir: makes a driver's data directory fresh without ever deleting something
// that is not ours: an existing directory is removed only when it is empty or holds a
// Calico catalog. Errors: std::runtime_error naming the directory.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace calico::bench {

inline void prepare_data_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir)) return;
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + " exists and is not a directory");
  if (!fs::is_empty(dir) && !fs::exists(fs::path(dir) / "catalog")) {
    throw std::runtime_error(dir + " is not empty and not a Calico data directory; refusing to delete it");
  }
  fs::remove_all(dir);
}

}  // namespace calico::bench
