// PageFile: one file of fixed-size pages (one per space), opened with O_DIRECT where the
// filesystem allows it.
//
// Entry points: open(), read_block(), write_block(), sync(), size_blocks(), remove().
// Thread safety: all const members and read_block/write_block may run concurrently (pread
// and pwrite on one fd); open/remove are not concurrent with other use of the same path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/page_id.h"
#include "io/fault_injector.h"

namespace calico::io {

class PageFile {
 public:
  PageFile() = default;
  PageFile(const PageFile&) = delete;
  PageFile& operator=(const PageFile&) = delete;
  PageFile(PageFile&& other) noexcept;
  PageFile& operator=(PageFile&& other) noexcept;
  ~PageFile();  // closes the fd

  // Opens `path` for page I/O; creates it when `create` (kIoError if it already exists when
  // `create`, or does not exist when !create). Tries O_DIRECT first; when the filesystem refuses
  // it (EINVAL), falls back to buffered I/O and prints one line to stderr saying so.
  // Pre: page_size is 4096, 8192 or 16384 (else kInvalidArgument).
  static PageFile open(const std::string& path, size_t page_size, bool create,
                       FaultInjector* faults = nullptr);

  // Deletes the file at `path`; kIoError if it cannot.
  static void remove(const std::string& path);

  // Reads block `block` into `buf` (page_size bytes, 4096-aligned).
  // Errors: kIoError (errno), kShortRead (fewer than page_size bytes, e.g. past EOF).
  void read_block(BlockId block, std::byte* buf) const;
  // Writes page_size bytes from `buf` (4096-aligned) to block `block`; extends the file.
  // Errors: kIoError, kShortRead (a short write is reported with the same code).
  void write_block(BlockId block, const std::byte* buf) const;
  // fdatasync; kIoError on failure.
  void sync() const;

  // Current file size in whole pages (fstat).
  uint64_t size_blocks() const;

  // Makes the file at least `blocks` pages long, with the disk space reserved (fallocate;
  // ftruncate where the filesystem cannot), so that a write-back there cannot fail for lack
  // of space and an extended block reads back as zeros. Never shrinks. Errors: kIoError
  // (ENOSPC included).
  void extend_blocks(uint64_t blocks) const;

  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  size_t page_size() const { return page_size_; }
  const std::string& path() const { return path_; }
  FaultInjector* faults() const { return faults_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
  size_t page_size_ = 0;
  std::string path_;
  FaultInjector* faults_ = nullptr;
};

}  // namespace calico::io
