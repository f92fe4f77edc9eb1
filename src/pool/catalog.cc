// Catalog: see catalog.h.
#include "pool/catalog.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include "calico/error.h"
#include "io/checksum.h"

namespace calico::pool {
namespace {

constexpr std::string_view kMagic = "calico-catalog";
constexpr int kFormatVersion = 3;  // 3 added `generation`; format 2 reads as generation 0

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  throw Error(ErrorCode::kIoError, what + " " + path + ": " + std::strerror(err));
}

// Closes an fd on every path out of a scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void fsync_path(const std::string& path, int flags) {
  Fd f{::open(path.c_str(), flags | O_CLOEXEC)};
  if (f.fd < 0) io_error("cannot open", path, errno);
  if (::fsync(f.fd) != 0) io_error("cannot fsync", path, errno);
}

// Splits `line` at single spaces; an empty field (two spaces, a leading or trailing space)
// makes the line malformed.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t sp = line.find(' ', start);
    out.push_back(line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return out;
}

// A decimal number without sign or leading zeros (except "0"), at most `max`.
bool parse_number(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out, 10);
  return ec == std::errc() && p == end && *out <= max;
}

class Parser {
 public:
  Parser(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  CatalogData parse() {
    if (bytes_.size() > kMaxCatalogBytes) fail(0, "larger than " + std::to_string(kMaxCatalogBytes) + " bytes");
    std::vector<std::string_view> f = next_line();
    if (f.size() != 2 || f[0] != kMagic) fail(line_, "not a Calico catalog");
    uint64_t version = 0;
    if (!parse_number(f[1], 1000, &version)) fail(line_, "bad format version");
    if (version != kFormatVersion && version != 2) {
      fail(line_, "format " + std::to_string(version) + " is not supported (this build reads format " +
                      std::to_string(kFormatVersion) + ")");
    }
    CatalogData data;
    uint64_t v = 0;
    f = next_line();
    if (f.size() != 2 || f[0] != "page_size" || !parse_number(f[1], 16384, &v) ||
        (v != 4096 && v != 8192 && v != 16384)) {
      fail(line_, "expected 'page_size <4096|8192|16384>'");
    }
    data.page_size = v;
    f = next_line();
    if (f.size() != 2 || f[0] != "next_space_id" || !parse_number(f[1], 0xFFFFFFFFu, &v) || v == 0) {
      fail(line_, "expected 'next_space_id <1..4294967295>'");
    }
    data.next_space_id = static_cast<SpaceId>(v);
    if (version >= 3) {
      f = next_line();
      if (f.size() != 2 || f[0] != "generation" || !parse_number(f[1], UINT64_MAX, &data.generation)) {
        fail(line_, "expected 'generation <n>'");
      }
    }
    std::set<SpaceId> ids;
    std::set<std::string_view> names;
    for (;;) {
      size_t line_start = pos_;
      f = next_line();
      if (f.size() == 2 && f[0] == "crc32c") {
        check_crc(f[1], line_start);
        break;
      }
      uint64_t id = 0, blocks = 0;
      if (f.size() != 4 || f[0] != "space" || !parse_number(f[1], 0xFFFFFFFFu, &id) || id == 0 ||
          !parse_number(f[2], uint64_t{1} << 32, &blocks) || !valid_space_name(f[3])) {
        fail(line_, "expected 'space <id> <blocks> <name>' or 'crc32c <hex>'");
      }
      if (id >= data.next_space_id) fail(line_, "space id " + std::to_string(id) + " is not below next_space_id");
      if (!ids.insert(static_cast<SpaceId>(id)).second) fail(line_, "space id " + std::to_string(id) + " twice");
      if (!names.insert(f[3]).second) fail(line_, "space name '" + std::string(f[3]) + "' twice");
      data.spaces.push_back({static_cast<SpaceId>(id), blocks, std::string(f[3])});
    }
    if (pos_ != bytes_.size()) fail(line_ + 1, "bytes after the checksum line");
    return data;
  }

 private:
  [[noreturn]] void fail(size_t line, const std::string& why) const {
    throw Error(ErrorCode::kCorruptCatalog, path_ + " line " + std::to_string(line) + ": " + why);
  }

  // The next '\n'-terminated line as fields; a missing '\n' is a truncated file.
  std::vector<std::string_view> next_line() {
    ++line_;
    size_t nl = bytes_.find('\n', pos_);
    if (nl == std::string_view::npos) fail(line_, "truncated (no end of line)");
    std::string_view line = bytes_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return fields_of(line);
  }

  void check_crc(std::string_view hex, size_t covered) const {
    uint32_t stored = 0;
    const char* end = hex.data() + hex.size();
    auto [p, ec] = std::from_chars(hex.data(), end, stored, 16);
    if (hex.size() != 8 || ec != std::errc() || p != end) fail(line_, "bad checksum field");
    uint32_t actual = io::crc32c(bytes_.data(), covered);
    if (actual != stored) fail(line_, "checksum mismatch (the catalog was damaged)");
  }

  std::string_view bytes_;
  const std::string& path_;
  size_t pos_ = 0;
  size_t line_ = 0;
};

}  // namespace

bool valid_space_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string format_catalog(const CatalogData& data) {
  std::string out = std::string(kMagic) + " " + std::to_string(kFormatVersion) + "\n" +
                    "page_size " + std::to_string(data.page_size) + "\n" +
                    "next_space_id " + std::to_string(data.next_space_id) + "\n" +
                    "generation " + std::to_string(data.generation) + "\n";
  for (const CatalogSpace& s : data.spaces) {
    out += "space " + std::to_string(s.id) + " " + std::to_string(s.blocks) + " " + s.name + "\n";
  }
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", io::crc32c(out.data(), out.size()));
  out += "crc32c " + std::string(crc) + "\n";
  return out;
}

CatalogData parse_catalog(std::string_view bytes, const std::string& path) {
  return Parser(bytes, path).parse();
}

std::optional<CatalogData> read_catalog(const std::string& dir) {
  std::string path = dir + "/" + kCatalogFile;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    io_error("cannot open", path, errno);
  }
  struct stat st;
  if (::fstat(f.fd, &st) != 0) io_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kCorruptCatalog, path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxCatalogBytes) {
    throw Error(ErrorCode::kCorruptCatalog, path + " is larger than " + std::to_string(kMaxCatalogBytes) + " bytes");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error("cannot read", path, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return parse_catalog(bytes, path);
}

void write_catalog(const std::string& dir, const CatalogData& data) {
  std::string path = dir + "/" + kCatalogFile;
  std::string tmp = dir + "/" + kCatalogTempFile;
  std::string bytes = format_catalog(data);
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) io_error("cannot create", tmp, errno);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) io_error("cannot write", tmp, n < 0 ? errno : ENOSPC);
      done += static_cast<size_t>(n);
    }
    if (::fsync(f.fd) != 0) io_error("cannot fsync", tmp, errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) io_error("cannot rename onto", path, errno);
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace calico::pool
