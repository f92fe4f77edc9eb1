// The handles a page access returns: SharedGuard (a shared pin), ExclusiveGuard (the
// exclusive latch) and OptimisticRead (a read validated afterwards, no pin). Guards are
// movable and release on destruction.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

#include "calico/detail/entry.h"
#include "calico/page_id.h"

namespace calico {

namespace pool {
template <class>
class PoolCore;
}  // namespace pool

// SharedGuard: a shared pin. Movable; releases on destruction.
class SharedGuard {
 public:
  SharedGuard() = default;
  SharedGuard(SharedGuard&& o) noexcept { *this = std::move(o); }
  SharedGuard& operator=(SharedGuard&& o) noexcept {
    release();
    entry_ = std::exchange(o.entry_, nullptr);
    data_ = o.data_;
    pid_ = o.pid_;
    return *this;
  }
  ~SharedGuard() { release(); }

  const std::byte* data() const { return data_; }
  PageId page_id() const { return pid_; }
  bool held() const { return entry_ != nullptr; }
  void release() {
    if (entry_ != nullptr) translation::unlock_shared(*std::exchange(entry_, nullptr));
  }

 private:
  template <class>
  friend class pool::PoolCore;
  SharedGuard(translation::Entry* e, const std::byte* d, PageId p) : entry_(e), data_(d), pid_(p) {}
  translation::Entry* entry_ = nullptr;
  const std::byte* data_ = nullptr;
  PageId pid_;
};

// ExclusiveGuard: the exclusive latch of one page. Release bumps the entry's version, which
// invalidates concurrent optimistic readers.
class ExclusiveGuard {
 public:
  ExclusiveGuard() = default;
  ExclusiveGuard(ExclusiveGuard&& o) noexcept { *this = std::move(o); }
  ExclusiveGuard& operator=(ExclusiveGuard&& o) noexcept {
    release();
    entry_ = std::exchange(o.entry_, nullptr);
    held_ = o.held_;
    data_ = o.data_;
    meta_ = o.meta_;
    pid_ = o.pid_;
    return *this;
  }
  ~ExclusiveGuard() { release(); }

  std::byte* data() const { return data_; }
  PageId page_id() const { return pid_; }
  bool held() const { return entry_ != nullptr; }
  // The page will be written back before its frame is reused, and by flush().
  void mark_dirty() { meta_->dirty.store(1, std::memory_order_relaxed); }
  void release() {
    if (entry_ != nullptr) {
      translation::unlock_exclusive(*std::exchange(entry_, nullptr), held_, /*bump_version=*/true);
    }
  }

 private:
  template <class>
  friend class pool::PoolCore;
  ExclusiveGuard(translation::Entry* e, translation::EntryWord held, std::byte* d,
                 pool::FrameMeta* m, PageId p)
      : entry_(e), held_(held), data_(d), meta_(m), pid_(p) {}
  translation::Entry* entry_ = nullptr;
  translation::EntryWord held_;
  std::byte* data_ = nullptr;
  pool::FrameMeta* meta_ = nullptr;
  PageId pid_;
};

// An optimistic read in progress: data may change under the reader until validate().
struct OptimisticRead {
  const std::byte* data = nullptr;
  const translation::Entry* entry = nullptr;
  translation::EntryWord seen;
  PageId pid;
};

}  // namespace calico
