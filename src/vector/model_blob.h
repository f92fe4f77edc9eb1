// Model blobs: the byte form of a trained quantiser (RaBitQ, PQ; vector/quantizer.h), as it
// will be kept in pool pages, and the bounds-checked writer and reader that build and parse
// it.
//
// Principal entry points:
//   BlobWriter w(kind); w.u32(..); w.floats(..); w.finish()   -> the framed blob
//   BlobReader r = BlobReader::open(bytes, n, kind)           checks the frame, then
//   r.u32(); r.floats(..); r.expect_end()                     reads the payload in order
//
// Layout (little-endian; x86-64 is, static_assert'ed in model_blob.cc):
//   [0, 4)    magic kBlobMagic ("CQM1")
//   [4, 6)    format version kBlobVersion
//   [6, 8)    kind (BlobKind)
//   [8, 16)   payload bytes P
//   [16, 20)  CRC32C of the payload
//   [20, 24)  CRC32C of bytes [0, 20)
//   [24, 24 + P)  payload: the model's fields, in the order its serialiser writes them
// A blob is exactly 24 + P bytes.
//
// Errors: every reader failure is calico::Error kCorruptPage (PageId{}: a blob is not one
// page) naming the field or check that failed: a short or long blob, a wrong magic, version
// or kind, a checksum mismatch, a read past the payload, bytes left over. Readers of fields
// with invariants (a dimension, a count) check them and throw the same. Never an abort:
// the bytes come from outside (a page on disk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace calico::vector {

inline constexpr uint32_t kBlobMagic = 0x314D5143;  // "CQM1" little-endian
inline constexpr uint16_t kBlobVersion = 1;
inline constexpr size_t kBlobHeaderBytes = 24;
// Upper bound on a payload (a RaBitQ rotation of dim 4096 is 64 MB): bigger is corrupt.
inline constexpr uint64_t kMaxBlobPayloadBytes = uint64_t{1} << 30;

enum class BlobKind : uint16_t { kRabitq = 1, kPq = 2 };

// The kind of a blob from its header, after checking the frame (magic, version, sizes,
// checksums). Errors as BlobReader::open.
BlobKind blob_kind(const uint8_t* bytes, size_t n);

class BlobWriter {
 public:
  explicit BlobWriter(BlobKind kind) : kind_(kind) {}
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void floats(const float* v, size_t n) { raw(v, n * 4); }
  // The framed blob (header + payload).
  std::vector<uint8_t> finish() const;

 private:
  void raw(const void* p, size_t n);
  BlobKind kind_;
  std::vector<uint8_t> payload_;
};

class BlobReader {
 public:
  // Checks the frame of bytes[0, n) (header, sizes, both checksums) and that it holds `kind`.
  // The reader keeps a pointer into bytes: they must outlive it.
  static BlobReader open(const uint8_t* bytes, size_t n, BlobKind kind);

  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  float f32(const char* field);           // finite, else corrupt
  void floats(float* out, size_t n, const char* field);  // n finite floats, else corrupt
  // Every payload byte was read, else corrupt.
  void expect_end() const;

  // Throws kCorruptPage "model blob: <what>".
  [[noreturn]] static void corrupt(const std::string& what);

 private:
  BlobReader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  void raw(void* out, size_t n, const char* field);
  const uint8_t* p_;  // the payload
  size_t n_;          // its bytes
  size_t at_ = 0;     // invariant: at_ <= n_
};

}  // namespace calico::vector
