// Catalog: see catalog.h.
#include "pool/catalog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "calico/error.h"

namespace calico::pool {
namespace {

constexpr const char* kMagic = "calico-catalog";
constexpr int kFormatVersion = 1;

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
  throw Error(ErrorCode::kIoError, what + " " + path + ": " + std::strerror(errno));
}

[[noreturn]] void corrupt(const std::string& path, int line, const std::string& why) {
  throw Error(ErrorCode::kCorruptCatalog, path + " line " + std::to_string(line) + ": " + why);
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) io_error("cannot open", path);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) io_error("cannot fsync", path);
}

}  // namespace

bool valid_space_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::optional<CatalogData> read_catalog(const std::string& dir) {
  std::string path = dir + "/catalog";
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::nullopt;
    io_error("cannot read", path);
  }
  CatalogData data;
  std::string line;
  int n = 0;
  bool have_header = false, have_page_size = false;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (n == 1) {
      int version = 0;
      fields >> version;
      if (key != kMagic) corrupt(path, n, "not a Calico catalog");
      if (version != kFormatVersion) corrupt(path, n, "unsupported format " + std::to_string(version));
      have_header = true;
    } else if (key == "page_size") {
      if (!(fields >> data.page_size)) corrupt(path, n, "bad page_size");
      have_page_size = true;
    } else if (key == "next_space_id") {
      if (!(fields >> data.next_space_id) || data.next_space_id == 0) corrupt(path, n, "bad next_space_id");
    } else if (key == "space") {
      CatalogSpace s{};
      if (!(fields >> s.id >> s.blocks >> s.name) || s.id == kInvalidSpace ||
          !valid_space_name(s.name) || s.blocks > (uint64_t{1} << 32)) {
        corrupt(path, n, "bad space record");
      }
      if (s.id >= data.next_space_id) corrupt(path, n, "space id at or past next_space_id");
      data.spaces.push_back(std::move(s));
    } else if (!key.empty()) {
      corrupt(path, n, "unknown record '" + key + "'");
    }
  }
  if (!have_header || !have_page_size) corrupt(path, n, "truncated catalog");
  return data;
}

void write_catalog(const std::string& dir, const CatalogData& data) {
  std::string path = dir + "/catalog";
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) io_error("cannot write", tmp);
    out << kMagic << ' ' << kFormatVersion << '\n'
        << "page_size " << data.page_size << '\n'
        << "next_space_id " << data.next_space_id << '\n';
    for (const CatalogSpace& s : data.spaces) {
      out << "space " << s.id << ' ' << s.blocks << ' ' << s.name << '\n';
    }
    out.flush();
    if (!out) io_error("cannot write", tmp);
  }
  fsync_path(tmp, O_RDONLY);
  if (::rename(tmp.c_str(), path.c_str()) != 0) io_error("cannot rename onto", path);
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace calico::pool
