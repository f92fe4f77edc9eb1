// Journal: see journal.h.
#include "pool/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "calico/error.h"
#include "io/checksum.h"
#include "io/io_ring.h"
#include "io/page_file.h"
#include "pool/pool_support.h"

namespace calico::pool {
namespace {

struct RecordHeader {
  uint32_t magic;
  uint32_t page_size;
  uint64_t generation;
  uint32_t space;
  uint32_t unused;
  uint64_t block;
  uint32_t crc;
};
static_assert(sizeof(RecordHeader) <= Journal::kRecordHeader);

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  throw Error(ErrorCode::kIoError, what + " " + path + ": " + std::strerror(err));
}

uint32_t record_crc(RecordHeader h, const std::byte* image, size_t page_size) {
  h.crc = 0;
  return io::crc32c(image, page_size, io::crc32c(&h, sizeof h));
}

// Closes an fd on every path out of a scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A page-aligned buffer (O_DIRECT transfers need one).
struct Aligned {
  explicit Aligned(size_t bytes) {
    if (bytes > 0 && ::posix_memalign(&p, 4096, bytes) != 0) throw std::bad_alloc();
  }
  ~Aligned() { std::free(p); }
  std::byte* data() const { return static_cast<std::byte*>(p); }
  void* p = nullptr;
};

void sync_dir(const std::string& dir) {
  Fd f{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (f.fd < 0) io_error("cannot open", dir, errno);
  if (::fsync(f.fd) != 0) io_error("cannot fsync", dir, errno);
}

}  // namespace

uint64_t Journal::recover(const std::string& dir, const CatalogData& catalog) {
  const std::string path = dir + "/" + kJournalFile;
  Fd j{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (j.fd < 0) {
    if (errno == ENOENT) return 0;
    io_error("cannot open", path, errno);
  }
  const size_t page = catalog.page_size;
  const size_t stride = kRecordHeader + page;
  std::map<SpaceId, uint64_t> blocks;
  for (const CatalogSpace& s : catalog.spaces) blocks[s.id] = s.blocks;
  // The space files as the pool opens them (O_DIRECT where the filesystem allows): buffered
  // writes here would collide in the page cache with a killed process's direct writes whose
  // completion is still running, which the kernel reports as EIO at the next fdatasync.
  std::map<SpaceId, io::PageFile> files;
  Aligned record(stride), image(page);
  uint64_t restored = 0;
  for (uint64_t offset = 0;; offset += stride) {
    ssize_t n = ::pread(j.fd, record.data(), stride, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) {
      offset -= stride;
      continue;
    }
    if (n < 0) io_error("cannot read", path, errno);
    if (static_cast<size_t>(n) < stride) break;  // the end, or a record cut short
    RecordHeader h;
    std::memcpy(&h, record.data(), sizeof h);
    std::memcpy(image.data(), record.data() + kRecordHeader, page);
    if (h.magic != kMagic || h.page_size != page || h.crc != record_crc(h, image.data(), page)) break;  // the end
    if (h.generation != catalog.generation) continue;  // stale: its flush committed
    auto b = blocks.find(h.space);
    if (b == blocks.end() || h.block >= b->second) continue;  // a dropped space, a forgotten block
    auto f = files.find(h.space);
    if (f == files.end()) {
      f = files.emplace(h.space, io::PageFile::open(space_path(dir, h.space), page, /*create=*/false)).first;
    }
    f->second.write_block(static_cast<BlockId>(h.block), image.data());
    ++restored;
  }
  for (auto& [id, file] : files) file.sync();
  // Every restored page is durable: the journal may go.
  if (::ftruncate(j.fd, 0) != 0) io_error("cannot truncate", path, errno);
  if (::fdatasync(j.fd) != 0) io_error("cannot fdatasync", path, errno);
  return restored;
}

Journal::Journal(const std::string& dir, size_t page_size, uint64_t generation,
                 std::span<const CatalogSpace> spaces, io::FaultInjector* faults)
    : path_(dir + "/" + kJournalFile), page_size_(page_size), faults_(faults), generation_(generation) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("cannot open", path_, errno);
  try {
    if (::ftruncate(fd_, 0) != 0) io_error("cannot truncate", path_, errno);
    sync_dir(dir);  // the journal's name is durable before any record relies on it
  } catch (...) {
    ::close(fd_);
    throw;
  }
  for (const CatalogSpace& s : spaces) committed_[s.id] = s.blocks;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const std::byte* bytes, size_t len) {
  int result = 0;
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pwrite(fd_, bytes + done, len - done, static_cast<off_t>(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result = n < 0 ? -errno : -ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (faults_ != nullptr) {
    result = faults_->on_complete(true, fd_, end_, static_cast<uint32_t>(len), result < 0 ? result : static_cast<int>(len));
    result = result < 0 ? result : (static_cast<size_t>(result) == len ? 0 : -EIO);
  }
  if (result < 0) io_error("cannot append to", path_, -result);
}

void Journal::sync() {
  int result = ::fdatasync(fd_) == 0 ? 0 : -errno;
  if (faults_ != nullptr) result = faults_->on_sync(fd_, result);
  if (result < 0) io_error("cannot fdatasync", path_, -result);
  syncs_.fetch_add(1, std::memory_order_relaxed);
}

void Journal::save(std::span<const Target> targets, io::IoRing& ring) {
  std::lock_guard lock(mu_);
  std::vector<const Target*> need;
  std::unordered_set<uint64_t> batch;
  for (const Target& t : targets) {
    auto c = committed_.find(t.space);
    if (c == committed_.end() || t.block >= c->second) continue;  // not durable at flush k
    const uint64_t key = PageId(t.space, t.block).raw;
    if (saved_.count(key) != 0 || !batch.insert(key).second) continue;
    need.push_back(&t);
  }
  if (need.empty()) return;
  const size_t stride = kRecordHeader + page_size_;
  // Images read straight into their records' slots: stride is a multiple of 4096 only when
  // the header is, so read into a page-aligned scratch and copy.
  Aligned images(need.size() * page_size_);
  std::vector<io::IoRequest> reads;
  reads.reserve(need.size());
  for (size_t i = 0; i < need.size(); ++i) {
    reads.push_back(io::IoRequest{need[i]->fd, need[i]->block * page_size_, images.data() + i * page_size_,
                                  static_cast<uint32_t>(page_size_), false, 0, 0});
  }
  ring.submit_and_wait(reads);
  std::vector<std::byte> out(need.size() * stride);
  for (size_t i = 0; i < need.size(); ++i) {
    std::byte* image = images.data() + i * page_size_;
    const int r = reads[i].result;
    if (r < 0) {
      throw Error(ErrorCode::kIoError,
                  "journal: reading the image of page " + std::to_string(need[i]->space) + ":" +
                      std::to_string(need[i]->block) + " before it is overwritten: " + std::strerror(-r),
                  PageId(need[i]->space, need[i]->block));
    }
    if (static_cast<size_t>(r) < page_size_) {
      // Only a block past the file's end (one the file never held: its image is zeros) may
      // read short; any other short read is an error, or the image saved would be torn.
      struct stat st;
      const uint64_t at = need[i]->block * page_size_;
      if (::fstat(need[i]->fd, &st) != 0 || static_cast<uint64_t>(st.st_size) > at) {
        throw Error(ErrorCode::kIoError,
                    "journal: reading the image of page " + std::to_string(need[i]->space) + ":" +
                        std::to_string(need[i]->block) + " before it is overwritten: " + std::to_string(r) + " of " +
                        std::to_string(page_size_) + " bytes",
                    PageId(need[i]->space, need[i]->block));
      }
      std::memset(image, 0, page_size_);
    }
    RecordHeader h{kMagic, static_cast<uint32_t>(page_size_), generation_, need[i]->space, 0, need[i]->block, 0};
    h.crc = record_crc(h, image, page_size_);
    std::byte* rec = out.data() + i * stride;
    std::memcpy(rec, &h, sizeof h);
    std::memcpy(rec + kRecordHeader, image, page_size_);
  }
  append(out.data(), out.size());
  sync();  // J1: durable before any of these pages is overwritten
  end_ += out.size();
  for (const Target* t : need) saved_.insert(PageId(t->space, t->block).raw);
  pages_saved_.fetch_add(need.size(), std::memory_order_relaxed);
}

bool Journal::dirty() const {
  std::lock_guard lock(mu_);
  return !saved_.empty();
}

void Journal::commit(const std::function<void(uint64_t generation)>& write_catalog,
                     std::span<const CatalogSpace> counts) {
  std::unique_lock epoch(epoch_);  // J2: no write batch between the catalog and the reset
  uint64_t next;
  {
    std::lock_guard lock(mu_);
    next = generation_ + 1;
  }
  write_catalog(next);  // the commit point; throws, changing nothing here, on failure
  std::lock_guard lock(mu_);
  generation_ = next;
  saved_.clear();
  committed_.clear();
  for (const CatalogSpace& s : counts) committed_[s.id] = s.blocks;
  // Best effort: records of an older generation are ignored by recover(), so a failed
  // truncation only means the next records go after them.
  if (::ftruncate(fd_, 0) == 0) end_ = 0;
}

void Journal::forget_space(SpaceId space) {
  std::lock_guard lock(mu_);
  committed_.erase(space);
}

uint64_t Journal::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

}  // namespace calico::pool
