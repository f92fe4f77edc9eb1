// Vector files of the ANN benchmarks (the TEXMEX formats of SIFT1M / GIST1M / SIFT1B):
// every row is a little-endian int32 dim followed by dim values,
//   .fvecs  float32 values      (base and query vectors)
//   .ivecs  int32 values        (ground truth: neighbour ids per query)
//   .bvecs  uint8 values        (SIFT1B; converted to float on reading)
// Every row of a file has the same dim, 1 <= dim <= kMaxDim.
//
// Entry points: read_fvecs / read_bvecs / read_ivecs (with a row limit), write_fvecs /
// write_bvecs / write_ivecs, vecs_shape (rows and dim from the size and the first header,
// without reading the rows). Reads and writes go through large buffered chunks (kChunkBytes),
// so a 512 MB file loads at the speed of the disk or page cache.
//
// Errors (calico::Error): kIoError for a file that cannot be opened, read or written (errno
// in the message); kInvalidArgument for a malformed file (empty, dim 0 or > kMaxDim, a row of
// another dim, a truncated last row, a negative id) or a matrix that cannot be written in the
// format. Every message names the file.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace calico::bench::data {

inline constexpr uint32_t kMaxDim = 65536;
inline constexpr uint64_t kAllRows = std::numeric_limits<uint64_t>::max();

// rows x dim floats, row-major.
struct FloatMatrix {
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<float> values;  // rows * dim

  const float* row(uint64_t i) const { return values.data() + i * dim; }
  float* row(uint64_t i) { return values.data() + i * dim; }
};

// rows x dim ids (for ground truth: one row per query, dim = k neighbour ids, closest first).
struct IdMatrix {
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<uint32_t> ids;  // rows * dim

  const uint32_t* row(uint64_t i) const { return ids.data() + i * dim; }
  uint32_t* row(uint64_t i) { return ids.data() + i * dim; }
};

// Reads the first min(max_rows, rows in file) rows. The whole file must be well formed up to
// those rows; a trailing partial row is an error when more rows than the whole ones are asked for.
FloatMatrix read_fvecs(const std::string& path, uint64_t max_rows = kAllRows);
FloatMatrix read_bvecs(const std::string& path, uint64_t max_rows = kAllRows);
IdMatrix read_ivecs(const std::string& path, uint64_t max_rows = kAllRows);

// Reads .fvecs or .bvecs by the file's extension (anything else: kInvalidArgument).
FloatMatrix read_vectors(const std::string& path, uint64_t max_rows = kAllRows);

// Write (create or truncate) path. write_bvecs requires integral values in [0, 255].
void write_fvecs(const std::string& path, const FloatMatrix& m);
void write_bvecs(const std::string& path, const FloatMatrix& m);
void write_ivecs(const std::string& path, const IdMatrix& m);

// The shape of a vector file from its size and its first header; value_bytes is 4 for fvecs
// and ivecs, 1 for bvecs. Errors as the readers (also when the size is not a whole number of
// rows), but no row after the first is looked at.
struct VecsShape {
  uint64_t rows = 0;
  uint32_t dim = 0;
};
VecsShape vecs_shape(const std::string& path, uint32_t value_bytes);

}  // namespace calico::bench::data
