// FaultInjector: lets tests make the I/O layer see the failures real disks produce (EIO,
// short reads, torn writes) without a faulty disk. Production code passes nullptr.
#pragma once

#include <cstdint>

namespace calico::io {

class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  // Called after every completed page I/O with the OS result (bytes transferred, or -errno).
  // Returns the result the caller sees. May be called from any thread concurrently.
  virtual int on_complete(bool is_write, int fd, uint64_t offset, uint32_t len, int result) = 0;
};

}  // namespace calico::io
