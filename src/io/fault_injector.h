// FaultInjector: lets tests make the I/O layer see the failures real disks produce without a
// faulty disk: EIO and short transfers on reads and writes, ENOSPC on writes and on file
// extension, a failing fdatasync, a torn write (only the first part of a page reaches the
// file), and a failing io_uring wait.
//
// Production code passes nullptr: every hook is behind one `faults != nullptr` test at its
// call site (io_ring.cc, page_file.cc), so an absent injector costs one predictable branch.
// Every hook may be called from any thread concurrently.
#pragma once

#include <cstdint>

namespace calico::io {

class FaultInjector {
 public:
  virtual ~FaultInjector() = default;

  // Before a page transfer is issued: how many of its `len` bytes are really transferred
  // (len: all; fewer: only the first ones, as in a short or torn write). Must be <= len; for
  // an O_DIRECT file, a multiple of 512.
  virtual uint32_t transfer_bytes(bool is_write, int fd, uint64_t offset, uint32_t len) {
    (void)is_write, (void)fd, (void)offset;
    return len;
  }

  // After every completed page transfer, with the OS result (bytes transferred, or -errno)
  // and the `len` asked for. Returns the result the caller sees.
  virtual int on_complete(bool is_write, int fd, uint64_t offset, uint32_t len, int result) = 0;

  // Before a file is extended to `bytes` (fallocate): 0 to go ahead, or the -errno the
  // extension fails with instead (e.g. -ENOSPC); the file is then left unchanged.
  virtual int on_extend(int fd, uint64_t bytes) {
    (void)fd, (void)bytes;
    return 0;
  }

  // After fdatasync(fd) returned `result` (0 or -errno): the result the caller sees.
  virtual int on_sync(int fd, int result) {
    (void)fd;
    return result;
  }

  // After io_uring_wait_cqe returned `result` (0 or -errno): the result the ring sees. A
  // faked failure leaves the completion in the queue (it is not consumed).
  virtual int on_wait(int result) { return result; }

  // While true, the device answers nothing: a ring's waits time out and its polls find no
  // completion (those the kernel posts stay queued, seen once this is false again). A ring
  // that polls `wait_polls(normal)` times (1 ms apart; normally ~10 s) gives up for good.
  virtual bool stalled() { return false; }
  virtual unsigned wait_polls(unsigned normal) { return normal; }
};

}  // namespace calico::io
