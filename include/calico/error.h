// Error: the one exception type of Calico's library code. Every failure that a caller can
// cause or observe (bad input, I/O, corruption, a full pool) is reported as an Error with a
// code; library code never calls exit() or abort() for them.
#pragma once

#include <stdexcept>
#include <string>

#include "calico/page_id.h"

namespace calico {

enum class ErrorCode {
  kInvalidArgument,   // a wrong parameter (page size, pool size, name...)
  kUnknownSpace,      // a space id or name that does not exist (or was dropped)
  kPageOutOfRange,    // a block number at or past the space's end
  kPoolFull,          // no frame can be freed: every frame is pinned or locked
  kIoError,           // the OS reported an error (errno in the message)
  kShortRead,         // a read returned fewer bytes than a page
  kChecksumMismatch,  // a page read from disk failed its checksum (page() names it)
  kCorruptCatalog,    // the catalog file cannot be parsed
  kPageSizeMismatch,  // the data directory was written with another page size
  kSpaceExists,       // create_space with a name already in use
  kRestartLimit,      // an index operation restarted more than its bound (a corrupt
                      // structure or a livelock; never normal contention)
  kCorruptPage,       // a page that passed its checksum holds bytes its reader cannot
                      // accept (a wrong header, an offset past the page, a cycle); page()
                      // names it
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& what, PageId page = PageId{})
      : std::runtime_error(std::string(to_string(code)) + ": " + what), code_(code), page_(page) {}

  ErrorCode code() const { return code_; }
  // The page the error is about, or PageId{} when it concerns no single page.
  PageId page() const { return page_; }

 private:
  ErrorCode code_;
  PageId page_;
};

inline const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kUnknownSpace: return "unknown space";
    case ErrorCode::kPageOutOfRange: return "page out of range";
    case ErrorCode::kPoolFull: return "pool full";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kShortRead: return "short read";
    case ErrorCode::kChecksumMismatch: return "checksum mismatch";
    case ErrorCode::kCorruptCatalog: return "corrupt catalog";
    case ErrorCode::kPageSizeMismatch: return "page size mismatch";
    case ErrorCode::kSpaceExists: return "space exists";
    case ErrorCode::kRestartLimit: return "restart limit";
    case ErrorCode::kCorruptPage: return "corrupt page";
  }
  return "unknown error";
}

}  // namespace calico
