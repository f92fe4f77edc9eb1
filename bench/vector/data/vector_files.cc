#include "vector/data/vector_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "calico/error.h"

namespace calico::bench::data {
namespace {

// Reads and writes move whole rows in chunks of about this many bytes.
constexpr size_t kChunkBytes = size_t{16} << 20;

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
  throw Error(ErrorCode::kIoError, fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", path, why));
}

// An open file descriptor, closed on destruction.
class Fd {
 public:
  Fd(const std::string& path, int flags) : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) io_error(flags & O_CREAT ? "cannot create" : "cannot open", path);
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) io_error("cannot stat", path_);
    return static_cast<uint64_t>(st.st_size);
  }

  // Reads exactly n bytes at offset (the caller knows from size() that they are there).
  void read_at(void* buf, size_t n, uint64_t offset) const {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) io_error("cannot read", path_);
      if (r == 0) bad_file(path_, fmt::format("unexpected end of file at byte {}", offset));
      p += r, n -= static_cast<size_t>(r), offset += static_cast<uint64_t>(r);
    }
  }

  void write_all(const void* buf, size_t n) const {
    const auto* p = static_cast<const char*>(buf);
    while (n > 0) {
      ssize_t r = ::write(fd_, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) io_error("cannot write", path_);
      p += r, n -= static_cast<size_t>(r);
    }
  }

  void close_checked() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io_error("cannot close", path_);
  }

 private:
  std::string path_;
  int fd_;
};

int32_t header_at(const char* p) {
  int32_t d;
  std::memcpy(&d, p, sizeof d);
  return d;
}

// Shape from the file size and the first header. Postcondition: 1 <= dim <= kMaxDim and the
// file holds `rows` whole rows plus `tail_bytes` (< one row) after them.
struct Layout {
  uint64_t rows;
  uint32_t dim;
  uint64_t row_bytes;
  uint64_t tail_bytes;
};

Layout layout_of(const Fd& fd, const std::string& path, uint32_t value_bytes) {
  const uint64_t size = fd.size();
  if (size == 0) bad_file(path, "empty file");
  if (size < 4) bad_file(path, fmt::format("truncated: {} bytes, less than one dim header", size));
  char head[4];
  fd.read_at(head, 4, 0);
  const int32_t d = header_at(head);
  if (d <= 0 || static_cast<uint32_t>(d) > kMaxDim) {
    bad_file(path, fmt::format("row 0 has dim {} (must be 1..{})", d, kMaxDim));
  }
  const uint64_t row_bytes = 4 + uint64_t{static_cast<uint32_t>(d)} * value_bytes;
  return Layout{size / row_bytes, static_cast<uint32_t>(d), row_bytes, size % row_bytes};
}

// Reads rows of File values (one header each) and hands each row's values to
// store(row, const File* values) in file order.
template <class File, class Store>
uint64_t read_rows(const std::string& path, uint64_t max_rows, uint32_t* dim_out, Store&& store_init) {
  Fd fd(path, O_RDONLY);
  const Layout lay = layout_of(fd, path, sizeof(File));
  const uint64_t rows = std::min(max_rows, lay.rows);
  *dim_out = lay.dim;
  auto store = store_init(rows, lay.dim);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkBytes / lay.row_bytes);
  std::vector<char> buf(std::min(rows, rows_per_chunk) * lay.row_bytes);
  std::vector<File> values(lay.dim);
  for (uint64_t first = 0; first < rows; first += rows_per_chunk) {
    const uint64_t n = std::min(rows_per_chunk, rows - first);
    fd.read_at(buf.data(), n * lay.row_bytes, first * lay.row_bytes);
    for (uint64_t i = 0; i < n; ++i) {
      const char* row = buf.data() + i * lay.row_bytes;
      const int32_t d = header_at(row);
      if (d != static_cast<int32_t>(lay.dim)) {
        bad_file(path, fmt::format("row {} has dim {}, row 0 has dim {}", first + i, d, lay.dim));
      }
      store(first + i, row + 4);
    }
  }
  if (max_rows > lay.rows && lay.tail_bytes != 0) {  // the partial row was asked for
    bad_file(path, fmt::format("truncated: {} bytes after row {} are not a whole row of {} bytes (dim {})",
                               lay.tail_bytes, rows, lay.row_bytes, lay.dim));
  }
  return rows;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Writes rows x dim values; encode(row, char* out) writes one row's dim values (no header).
template <class Encode>
void write_rows(const std::string& path, uint64_t rows, uint32_t dim, uint32_t value_bytes, Encode&& encode) {
  if (dim == 0 || dim > kMaxDim) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: cannot write dim {} (must be 1..{})", path, dim, kMaxDim));
  }
  Fd fd(path, O_WRONLY | O_CREAT | O_TRUNC);
  const uint64_t row_bytes = 4 + uint64_t{dim} * value_bytes;
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkBytes / row_bytes);
  std::vector<char> buf(std::min(rows, rows_per_chunk) * row_bytes);
  const int32_t header = static_cast<int32_t>(dim);
  for (uint64_t first = 0; first < rows; first += rows_per_chunk) {
    const uint64_t n = std::min(rows_per_chunk, rows - first);
    for (uint64_t i = 0; i < n; ++i) {
      char* row = buf.data() + i * row_bytes;
      std::memcpy(row, &header, 4);
      encode(first + i, row + 4);
    }
    fd.write_all(buf.data(), n * row_bytes);
  }
  fd.close_checked();
}

}  // namespace

FloatMatrix read_fvecs(const std::string& path, uint64_t max_rows) {
  FloatMatrix m;
  m.rows = read_rows<float>(path, max_rows, &m.dim, [&m](uint64_t rows, uint32_t dim) {
    m.values.resize(rows * dim);
    return [&m, dim](uint64_t r, const char* v) { std::memcpy(m.row(r), v, size_t{dim} * sizeof(float)); };
  });
  return m;
}

FloatMatrix read_bvecs(const std::string& path, uint64_t max_rows) {
  FloatMatrix m;
  m.rows = read_rows<uint8_t>(path, max_rows, &m.dim, [&m](uint64_t rows, uint32_t dim) {
    m.values.resize(rows * dim);
    return [&m, dim](uint64_t r, const char* v) {
      const auto* b = reinterpret_cast<const uint8_t*>(v);
      std::copy(b, b + dim, m.row(r));
    };
  });
  return m;
}

IdMatrix read_ivecs(const std::string& path, uint64_t max_rows) {
  IdMatrix m;
  m.rows = read_rows<int32_t>(path, max_rows, &m.dim, [&m, &path](uint64_t rows, uint32_t dim) {
    m.ids.resize(rows * dim);
    return [&m, &path, dim](uint64_t r, const char* v) {
      uint32_t* out = m.row(r);
      for (uint32_t j = 0; j < dim; ++j) {
        const int32_t id = header_at(v + size_t{j} * 4);
        if (id < 0) bad_file(path, fmt::format("row {} holds the negative id {}", r, id));
        out[j] = static_cast<uint32_t>(id);
      }
    };
  });
  return m;
}

FloatMatrix read_vectors(const std::string& path, uint64_t max_rows) {
  if (ends_with(path, ".fvecs")) return read_fvecs(path, max_rows);
  if (ends_with(path, ".bvecs")) return read_bvecs(path, max_rows);
  throw Error(ErrorCode::kInvalidArgument, path + ": unknown vector file type (expected .fvecs or .bvecs)");
}

void write_fvecs(const std::string& path, const FloatMatrix& m) {
  if (m.values.size() != m.rows * m.dim) throw Error(ErrorCode::kInvalidArgument, path + ": matrix size mismatch");
  write_rows(path, m.rows, m.dim, 4,
             [&m](uint64_t r, char* out) { std::memcpy(out, m.row(r), size_t{m.dim} * sizeof(float)); });
}

void write_bvecs(const std::string& path, const FloatMatrix& m) {
  if (m.values.size() != m.rows * m.dim) throw Error(ErrorCode::kInvalidArgument, path + ": matrix size mismatch");
  for (uint64_t i = 0; i < m.values.size(); ++i) {
    const float v = m.values[i];
    if (!(v >= 0.0f && v <= 255.0f) || std::nearbyint(v) != v) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: value {} at row {} is not an integer in [0, 255]", path, v, i / m.dim));
    }
  }
  write_rows(path, m.rows, m.dim, 1, [&m](uint64_t r, char* out) {
    const float* v = m.row(r);
    for (uint32_t j = 0; j < m.dim; ++j) out[j] = static_cast<char>(static_cast<uint8_t>(v[j]));
  });
}

void write_ivecs(const std::string& path, const IdMatrix& m) {
  if (m.ids.size() != m.rows * m.dim) throw Error(ErrorCode::kInvalidArgument, path + ": matrix size mismatch");
  for (uint32_t id : m.ids) {
    if (id > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: id {} does not fit an int32", path, id));
    }
  }
  write_rows(path, m.rows, m.dim, 4,
             [&m](uint64_t r, char* out) { std::memcpy(out, m.row(r), size_t{m.dim} * sizeof(uint32_t)); });
}

VecsShape vecs_shape(const std::string& path, uint32_t value_bytes) {
  Fd fd(path, O_RDONLY);
  const Layout lay = layout_of(fd, path, value_bytes);
  if (lay.tail_bytes != 0) {
    bad_file(path, fmt::format("truncated: {} bytes after row {} are not a whole row of {} bytes (dim {})",
                               lay.tail_bytes, lay.rows, lay.row_bytes, lay.dim));
  }
  return VecsShape{lay.rows, lay.dim};
}

}  // namespace calico::bench::data
