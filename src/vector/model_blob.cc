#include "vector/model_blob.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "calico/checks.h"
#include "calico/error.h"
#include "io/checksum.h"

namespace calico::vector {

static_assert(std::endian::native == std::endian::little, "model blobs are written in the machine's byte order");

namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The frame's payload after every check, as (pointer, bytes).
std::pair<const uint8_t*, size_t> check_frame(const uint8_t* bytes, size_t n) {
  if (bytes == nullptr || n < kBlobHeaderBytes) {
    BlobReader::corrupt("shorter than its header (" + std::to_string(n) + " bytes, need " +
                        std::to_string(kBlobHeaderBytes) + ")");
  }
  if (load<uint32_t>(bytes + 20) != io::crc32c(bytes, 20)) BlobReader::corrupt("header checksum mismatch");
  if (load<uint32_t>(bytes) != kBlobMagic) BlobReader::corrupt("wrong magic");
  if (load<uint16_t>(bytes + 4) != kBlobVersion) {
    BlobReader::corrupt("unknown format version " + std::to_string(load<uint16_t>(bytes + 4)));
  }
  const uint64_t payload = load<uint64_t>(bytes + 8);
  if (payload > kMaxBlobPayloadBytes || payload != n - kBlobHeaderBytes) {
    BlobReader::corrupt("payload of " + std::to_string(payload) + " bytes in a blob of " + std::to_string(n));
  }
  if (load<uint32_t>(bytes + 16) != io::crc32c(bytes + kBlobHeaderBytes, payload)) {
    BlobReader::corrupt("payload checksum mismatch");
  }
  return {bytes + kBlobHeaderBytes, static_cast<size_t>(payload)};
}

}  // namespace

BlobKind blob_kind(const uint8_t* bytes, size_t n) {
  check_frame(bytes, n);
  const uint16_t kind = load<uint16_t>(bytes + 6);
  if (kind != uint16_t(BlobKind::kRabitq) && kind != uint16_t(BlobKind::kPq)) {
    BlobReader::corrupt("unknown kind " + std::to_string(kind));
  }
  return BlobKind(kind);
}

void BlobWriter::raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  payload_.insert(payload_.end(), b, b + n);
}

std::vector<uint8_t> BlobWriter::finish() const {
  CALICO_CHECK(payload_.size() <= kMaxBlobPayloadBytes);
  std::vector<uint8_t> out(kBlobHeaderBytes + payload_.size());
  const uint32_t magic = kBlobMagic;
  const uint16_t version = kBlobVersion, kind = uint16_t(kind_);
  const uint64_t payload = payload_.size();
  const uint32_t crc = io::crc32c(payload_.data(), payload_.size());
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &kind, 2);
  std::memcpy(out.data() + 8, &payload, 8);
  std::memcpy(out.data() + 16, &crc, 4);
  const uint32_t header_crc = io::crc32c(out.data(), 20);
  std::memcpy(out.data() + 20, &header_crc, 4);
  if (!payload_.empty()) std::memcpy(out.data() + kBlobHeaderBytes, payload_.data(), payload_.size());
  return out;
}

BlobReader BlobReader::open(const uint8_t* bytes, size_t n, BlobKind kind) {
  const BlobKind got = blob_kind(bytes, n);
  if (got != kind) {
    corrupt("holds model kind " + std::to_string(uint16_t(got)) + ", expected " + std::to_string(uint16_t(kind)));
  }
  const auto [p, payload] = check_frame(bytes, n);
  return BlobReader(p, payload);
}

void BlobReader::corrupt(const std::string& what) { throw Error(ErrorCode::kCorruptPage, "model blob: " + what); }

void BlobReader::raw(void* out, size_t n, const char* field) {
  if (n > n_ - at_) corrupt(std::string("truncated at field '") + field + "'");
  std::memcpy(out, p_ + at_, n);
  at_ += n;
}

uint32_t BlobReader::u32(const char* field) {
  uint32_t v;
  raw(&v, 4, field);
  return v;
}

uint64_t BlobReader::u64(const char* field) {
  uint64_t v;
  raw(&v, 8, field);
  return v;
}

float BlobReader::f32(const char* field) {
  float v;
  raw(&v, 4, field);
  if (!std::isfinite(v)) corrupt(std::string("field '") + field + "' is not finite");
  return v;
}

void BlobReader::floats(float* out, size_t n, const char* field) {
  if (n > (n_ - at_) / 4) corrupt(std::string("truncated at field '") + field + "'");
  raw(out, n * 4, field);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) corrupt(std::string("field '") + field + "' holds a non-finite value");
  }
}

void BlobReader::expect_end() const {
  if (at_ != n_) corrupt(std::to_string(n_ - at_) + " bytes left after the last field");
}

}  // namespace calico::vector
