// NumPy arrays in and out of the module, and the one rule for vector input:
//   vectors and queries must be float32 and C-contiguous (1-D: one row; 2-D: rows x dim),
//   any object with the buffer protocol (NumPy arrays, memoryviews):
//   they are read in place, never copied. Any other dtype or a non-contiguous layout is a
//   TypeError (naming the fix: np.ascontiguousarray(x, dtype=np.float32)); a wrong shape or
//   dim is calico.InvalidArgumentError (a ValueError).
//   ids are a 1-D integer array (any integer dtype, no negative value; uint64 for ids of
//   2^63 and up) of one per row, copied once into uint64 (small next to the vectors).
//   labels are integers 0 .. 2^32 - 1: a 1-D integer array, or a list, tuple or int
//   (converted by numpy.asarray), copied into uint32; a float, bool or other dtype is a
//   TypeError, a negative or too large label calico.InvalidArgumentError, naming `labels`.
//   Outputs are new NumPy arrays (numpy.empty) that the search fills in place.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "api.h"
#include "calico/error.h"

namespace calico::py {

namespace nb = nanobind;

using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

inline nb::builtin_exception vector_type_error(const char* what, const char* problem) {
  return nb::type_error((std::string(what) + " must be " + problem +
                         " (pass np.ascontiguousarray(x, dtype=np.float32); calico never copies vectors implicitly)")
                            .c_str());
}

// The rows of a float32 C-contiguous array of `dim` columns, read through the buffer
// protocol (what: the argument's name). Holds the buffer (and so the array) until
// destroyed: destroy it with the GIL held, after the C++ call that reads the rows.
class FloatRows {
 public:
  FloatRows(nb::handle obj, uint32_t dim, const char* what) {
    Py_buffer& view_ = held_.view;
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      throw vector_type_error(what, "a float32 NumPy array");
    }
    held_.on = true;
    const std::string_view f = view_.format ? view_.format : "B";
    if (view_.itemsize != 4 || (f != "f" && f != "<f" && f != "=f")) throw vector_type_error(what, "a float32 array");
    if (!PyBuffer_IsContiguous(&view_, 'C')) throw vector_type_error(what, "C-contiguous");
    if (view_.ndim != 1 && view_.ndim != 2) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) +
                                                   " must be 1-D (one vector) or 2-D (rows x dim), not " +
                                                   std::to_string(view_.ndim) + "-D");
    }
    const uint64_t cols = view_.shape[view_.ndim - 1];
    if (cols != dim) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + " has dimension " + std::to_string(cols) +
                                                   "; the index has dim " + std::to_string(dim));
    }
    batch_ = VectorBatch{static_cast<const float*>(view_.buf), view_.ndim == 1 ? 1 : static_cast<uint64_t>(view_.shape[0])};
  }
  FloatRows(const FloatRows&) = delete;
  FloatRows& operator=(const FloatRows&) = delete;
  const VectorBatch& batch() const { return batch_; }

 private:
  struct Held {  // a member, so that the buffer is released when the constructor throws too
    Py_buffer view{};
    bool on = false;
    ~Held() {
      if (on) PyBuffer_Release(&view);
    }
  } held_;
  VectorBatch batch_;
};

// The integers of `a` (1-D, any integer dtype of 8 to 64 bits) as uint64; `what` names the
// argument in errors. Negative values are an error.
inline std::vector<uint64_t> integers_of(const AnyArray& a, const char* what) {
  const nb::dlpack::dtype t = a.dtype();
  if (t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::Int) &&
      t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::UInt)) {
    throw nb::type_error((std::string(what) + " must be an integer array").c_str());
  }
  if (a.ndim() != 1) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " must be 1-D");
  const uint64_t n = a.shape(0);
  std::vector<uint64_t> out(n);
  const bool is_signed = t.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int);
  const auto* base = static_cast<const char*>(a.data());
  const int64_t step = a.stride(0) * (t.bits / 8);
  for (uint64_t i = 0; i < n; ++i) {
    const char* p = base + static_cast<int64_t>(i) * step;
    int64_t s = 0;
    uint64_t u = 0;
    switch (t.bits) {
      case 8: is_signed ? s = *reinterpret_cast<const int8_t*>(p) : u = *reinterpret_cast<const uint8_t*>(p); break;
      case 16: is_signed ? s = *reinterpret_cast<const int16_t*>(p) : u = *reinterpret_cast<const uint16_t*>(p); break;
      case 32: is_signed ? s = *reinterpret_cast<const int32_t*>(p) : u = *reinterpret_cast<const uint32_t*>(p); break;
      case 64: is_signed ? s = *reinterpret_cast<const int64_t*>(p) : u = *reinterpret_cast<const uint64_t*>(p); break;
      default: throw nb::type_error((std::string(what) + " must be an integer array of 8 to 64 bits").c_str());
    }
    if (is_signed && s < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(what) + "[" + std::to_string(i) + "] is negative (" + std::to_string(s) + ")");
    }
    out[i] = is_signed ? static_cast<uint64_t>(s) : u;
  }
  return out;
}

// ids (None: empty) checked against the row count and copied to uint64.
inline std::vector<uint64_t> ids_of(const nb::object& ids, uint64_t rows) {
  if (ids.is_none()) return {};
  AnyArray a;
  if (!nb::try_cast(ids, a, false)) throw nb::type_error("ids must be None or a 1-D NumPy integer array");
  if (a.ndim() != 1 || a.shape(0) != rows) {
    throw Error(ErrorCode::kInvalidArgument, "ids must be 1-D with one id per row (" + std::to_string(rows) + ")");
  }
  return integers_of(a, "ids");
}

// Labels (see the header comment) as u32; `what` names the argument in errors. Arrays are
// read as they are; other objects go through numpy.asarray (an int becomes one label).
inline std::vector<uint32_t> labels_of(nb::handle obj, const char* what) {
  const std::string kinds = std::string(what) + " must be integers from 0 to 2^32 - 1 (a 1-D integer array, a list of ints, or an int)";
  if (PyBool_Check(obj.ptr())) throw nb::type_error(kinds.c_str());
  AnyArray a;
  nb::object converted;
  if (!nb::try_cast(obj, a, false) || a.ndim() == 0) {
    static const nb::object* asarray = new nb::object(nb::module_::import_("numpy").attr("asarray"));
    try {
      converted = (*asarray)(obj).attr("reshape")(-1);
    } catch (const nb::python_error&) {
      throw nb::type_error(kinds.c_str());
    }
    if (!nb::try_cast(converted, a, false)) throw nb::type_error(kinds.c_str());
  }
  if (a.ndim() == 1 && a.shape(0) == 0) return {};  // numpy.asarray([]) is float64: no label either way
  const nb::dlpack::dtype t = a.dtype();
  if (t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::Int) &&
      t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::UInt)) {
    throw nb::type_error(kinds.c_str());
  }
  const std::vector<uint64_t> wide = integers_of(a, what);
  std::vector<uint32_t> out(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] > std::numeric_limits<uint32_t>::max()) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + "[" + std::to_string(i) + "] is " +
                                                   std::to_string(wide[i]) + ", past the largest label 2^32 - 1");
    }
    out[i] = static_cast<uint32_t>(wide[i]);
  }
  return out;
}

// Labels of an add (None: empty), one per row.
inline std::vector<uint32_t> row_labels_of(const nb::object& labels, uint64_t rows) {
  if (labels.is_none()) return {};
  std::vector<uint32_t> out = labels_of(labels, "labels");
  if (out.size() != rows) {
    throw Error(ErrorCode::kInvalidArgument, "labels must be 1-D with one label per row (" + std::to_string(rows) +
                                                 " rows, " + std::to_string(out.size()) + " labels)");
  }
  return out;
}

// A search filter as the list of allowed ids: a 1-D integer array of ids (any integer
// dtype, none negative), or a 1-D boolean mask whose element i allows id i. The index maps
// them to its slots (BasicMapped::filter; ids not in the index allow nothing).
inline std::vector<uint64_t> allowed_ids_of(const nb::object& filter) {
  AnyArray a;
  if (!nb::try_cast(filter, a, false)) {
    throw nb::type_error("filter must be a 1-D NumPy array: integer ids, or a boolean mask over ids");
  }
  if (a.dtype().code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool)) {
    if (a.ndim() != 1) throw Error(ErrorCode::kInvalidArgument, "filter must be 1-D");
    std::vector<uint64_t> ids;
    const auto* base = static_cast<const char*>(a.data());
    for (uint64_t i = 0; i < a.shape(0); ++i) {
      if (base[static_cast<int64_t>(i) * a.stride(0)] != 0) ids.push_back(i);
    }
    return ids;
  }
  return integers_of(a, "filter");
}

// A new rows x cols NumPy array (numpy.empty, called through a cached reference: cheaper
// than exporting a C++ buffer) and its data pointer, valid while `array` lives.
template <class T>
struct OutArray {
  OutArray(uint64_t rows, uint64_t cols) {
    static const nb::object* empty = new nb::object(nb::module_::import_("numpy").attr("empty"));
    static const nb::object* dtype =
        new nb::object(nb::module_::import_("numpy").attr(std::is_same_v<T, float> ? "float32" : "uint64"));
    array = (*empty)(nb::make_tuple(rows, cols), *dtype);
    Py_buffer view;
    if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
    data = static_cast<T*>(view.buf);
    PyBuffer_Release(&view);  // `array` keeps the memory; nothing resizes it
  }
  nb::object release() { return std::move(array); }
  nb::object array;
  T* data;
};

}  // namespace calico::py
