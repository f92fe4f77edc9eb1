// PageFile: pread/pwrite of whole pages on one file, O_DIRECT when the filesystem allows it.
//
// Entry points: PageFile::open(), remove(), read_block(), write_block(), sync(),
// size_blocks().
//
// Contract of every transfer: the OS result (bytes or -errno) goes through the fault injector
// first, then is judged: negative => kIoError, fewer than page_size bytes => kShortRead.
#include "io/page_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "calico/checks.h"
#include "calico/error.h"

namespace calico::io {
namespace {

constexpr uintptr_t kBufferAlignment = 4096;  // O_DIRECT needs block-aligned buffers

// strerror_r comes in a GNU flavour (returns char*) and an XSI one (returns int, fills buf);
// these overloads accept either. strerror() itself is not guaranteed thread-safe.
[[maybe_unused]] std::string strerror_result(const char* s, const char*) { return s; }
[[maybe_unused]] std::string strerror_result(int, const char* buf) { return buf; }

std::string errno_text(int err) {
  char buf[128] = {};
  return strerror_result(strerror_r(err, buf, sizeof buf), buf);
}

bool valid_page_size(size_t page_size) {
  return page_size == 4096 || page_size == 8192 || page_size == 16384;
}

// Judges one completed transfer of block `block`; `result` is after the fault injector.
void check_transfer(const PageFile& file, bool is_write, BlockId block, int result) {
  const char* op = is_write ? "write" : "read";
  if (result < 0) {
    throw Error(ErrorCode::kIoError, std::string(op) + " of block " + std::to_string(block) +
                                         " of " + file.path() + ": " + errno_text(-result));
  }
  if (static_cast<size_t>(result) < file.page_size()) {
    throw Error(ErrorCode::kShortRead,
                std::string(op) + " of block " + std::to_string(block) + " of " + file.path() +
                    " transferred " + std::to_string(result) + " of " +
                    std::to_string(file.page_size()) + " bytes");
  }
  if (static_cast<size_t>(result) > file.page_size()) {
    throw Error(ErrorCode::kIoError, std::string(op) + " of block " + std::to_string(block) + " of " +
                                         file.path() + " reported " + std::to_string(result) +
                                         " bytes, more than a page");
  }
}

}  // namespace

PageFile::PageFile(PageFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      direct_(other.direct_),
      page_size_(other.page_size_),
      path_(std::move(other.path_)),
      faults_(other.faults_) {}

PageFile& PageFile::operator=(PageFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    direct_ = other.direct_;
    page_size_ = other.page_size_;
    path_ = std::move(other.path_);
    faults_ = other.faults_;
  }
  return *this;
}

PageFile::~PageFile() {
  // close() errors cannot be reported from a destructor; durability is sync()'s job.
  if (fd_ >= 0) ::close(fd_);
}

PageFile PageFile::open(const std::string& path, size_t page_size, bool create,
                        FaultInjector* faults) {
  if (!valid_page_size(page_size)) {
    throw Error(ErrorCode::kInvalidArgument,
                "page size " + std::to_string(page_size) + " for " + path +
                    " is not 4096, 8192 or 16384");
  }
  const int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
  constexpr mode_t kMode = 0644;

  bool direct = true;
  int fd = ::open(path.c_str(), flags | O_DIRECT, kMode);
  if (fd < 0 && errno == EINVAL) {
    // The kernel rejects O_DIRECT only after O_CREAT|O_EXCL has created the file (EEXIST is
    // reported before EINVAL), so on EINVAL the file is new and ours: reopen without O_EXCL.
    direct = false;
    fd = ::open(path.c_str(), flags & ~O_EXCL, kMode);
    if (fd >= 0) {
      std::fprintf(stderr, "calico: O_DIRECT not supported for %s; using buffered I/O\n",
                   path.c_str());
    }
  }
  if (fd < 0) {
    throw Error(ErrorCode::kIoError, "open " + path + ": " + errno_text(errno));
  }

  PageFile file;
  file.fd_ = fd;
  file.direct_ = direct;
  file.page_size_ = page_size;
  file.path_ = path;
  file.faults_ = faults;
  return file;
}

void PageFile::remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    throw Error(ErrorCode::kIoError, "unlink " + path + ": " + errno_text(errno));
  }
}

void PageFile::read_block(BlockId block, std::byte* buf) const {
  CALICO_CHECK(fd_ >= 0);
  CALICO_CHECK(reinterpret_cast<uintptr_t>(buf) % kBufferAlignment == 0);
  const uint64_t offset = uint64_t{block} * page_size_;
  size_t len = page_size_;
  if (faults_ != nullptr) len = faults_->transfer_bytes(false, fd_, offset, static_cast<uint32_t>(len));
  ssize_t n;
  // Unbounded on EINTR: each retry is a delivered signal, not a failing device.
  do {
    n = ::pread(fd_, buf, len, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  int result = n < 0 ? -errno : static_cast<int>(n);
  if (faults_ != nullptr) {
    result = faults_->on_complete(false, fd_, offset, static_cast<uint32_t>(page_size_), result);
  }
  check_transfer(*this, false, block, result);
}

void PageFile::write_block(BlockId block, const std::byte* buf) const {
  CALICO_CHECK(fd_ >= 0);
  CALICO_CHECK(reinterpret_cast<uintptr_t>(buf) % kBufferAlignment == 0);
  const uint64_t offset = uint64_t{block} * page_size_;
  size_t len = page_size_;
  if (faults_ != nullptr) len = faults_->transfer_bytes(true, fd_, offset, static_cast<uint32_t>(len));
  ssize_t n;
  do {
    n = ::pwrite(fd_, buf, len, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  int result = n < 0 ? -errno : static_cast<int>(n);
  if (faults_ != nullptr) {
    result = faults_->on_complete(true, fd_, offset, static_cast<uint32_t>(page_size_), result);
  }
  check_transfer(*this, true, block, result);
}

void PageFile::sync() const {
  CALICO_CHECK(fd_ >= 0);
  int rc;
  do {
    rc = ::fdatasync(fd_);
  } while (rc != 0 && errno == EINTR);
  int result = rc == 0 ? 0 : -errno;
  if (faults_ != nullptr) result = faults_->on_sync(fd_, result);
  if (result != 0) {
    throw Error(ErrorCode::kIoError, "fdatasync " + path_ + ": " + errno_text(-result));
  }
}

uint64_t PageFile::size_blocks() const {
  CALICO_CHECK(fd_ >= 0);
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    throw Error(ErrorCode::kIoError, "fstat " + path_ + ": " + errno_text(errno));
  }
  return static_cast<uint64_t>(st.st_size) / page_size_;
}

void PageFile::extend_blocks(uint64_t blocks) const {
  CALICO_CHECK(fd_ >= 0);
  if (blocks <= size_blocks()) return;
  auto bytes = static_cast<off_t>(blocks * page_size_);
  int result = faults_ != nullptr ? faults_->on_extend(fd_, static_cast<uint64_t>(bytes)) : 0;
  if (result == 0) {
    int rc;
    do {
      rc = ::fallocate(fd_, 0, 0, bytes);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) rc = ::ftruncate(fd_, bytes);
    result = rc == 0 ? 0 : -errno;
  }
  if (result != 0) {
    throw Error(ErrorCode::kIoError,
                "extending " + path_ + " to " + std::to_string(blocks) + " pages: " + errno_text(-result));
  }
}

}  // namespace calico::io
