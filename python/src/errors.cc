// calico::Error (and ClosedError) to the Python classes of calico/_errors.py: one class per
// ErrorCode, raised as cls(message, code, page) where page is (space, block) or None.
#include <nanobind/nanobind.h>

#include "api.h"
#include "bindings.h"
#include "calico/error.h"

namespace calico::py {

namespace nb = nanobind;

namespace {

const char* class_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kInvalidArgument: return "InvalidArgumentError";
    case ErrorCode::kUnknownSpace: return "UnknownSpaceError";
    case ErrorCode::kPageOutOfRange: return "OutOfRangeError";
    case ErrorCode::kPoolFull: return "PoolFullError";
    case ErrorCode::kIoError: return "IoError";
    case ErrorCode::kShortRead: return "ShortReadError";
    case ErrorCode::kChecksumMismatch: return "ChecksumMismatchError";
    case ErrorCode::kCorruptCatalog: return "CorruptCatalogError";
    case ErrorCode::kPageSizeMismatch: return "PageSizeMismatchError";
    case ErrorCode::kSpaceExists: return "SpaceExistsError";
    case ErrorCode::kRestartLimit: return "RestartLimitError";
    case ErrorCode::kCorruptPage: return "CorruptPageError";
  }
  return "Error";
}

void raise(const char* cls_name, const char* message, nb::object code, nb::object page) {
  nb::module_ errors = nb::module_::import_("calico._errors");
  nb::object cls = errors.attr(cls_name);
  nb::object exc = cls(message, code, page);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

}  // namespace

void register_errors() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      nb::object page = e.page().valid() ? nb::object(nb::make_tuple(e.page().space(), e.page().block())) : nb::none();
      raise(class_name(e.code()), e.what(), nb::str(to_string(e.code())), page);
    } catch (const ClosedError& e) {
      raise("ClosedError", e.what(), nb::none(), nb::none());
    }
  });
}

}  // namespace calico::py
