// NumPy arrays in and out of the module, and the one rule for vector input:
//   vectors and queries must be float32 and C-contiguous (1-D: one row; 2-D: rows x dim):
//   they are read in place, never copied. Any other dtype or a non-contiguous layout is a
//   TypeError (naming the fix: np.ascontiguousarray(x, dtype=np.float32)); a wrong shape or
//   dim is calico.InvalidArgumentError (a ValueError).
//   ids are a 1-D integer array (any integer dtype, no negative value) of one per row,
//   copied once into uint64 (they are small next to the vectors).
//   Outputs are new NumPy arrays that own C++ buffers (no copy on return).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api.h"
#include "calico/error.h"

namespace calico::py {

namespace nb = nanobind;

using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

inline bool c_contiguous(const AnyArray& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// The rows of a float32 C-contiguous array of `dim` columns (what: the argument's name).
inline VectorBatch vectors_of(const AnyArray& a, uint32_t dim, const char* what) {
  if (a.dtype() != nb::dtype<float>()) {
    throw nb::type_error((std::string(what) + " must be a float32 array (pass np.ascontiguousarray(x, "
                                              "dtype=np.float32); calico never copies vectors implicitly)")
                             .c_str());
  }
  if (!c_contiguous(a)) {
    throw nb::type_error((std::string(what) + " must be C-contiguous (pass np.ascontiguousarray(x, "
                                              "dtype=np.float32); calico never copies vectors implicitly)")
                             .c_str());
  }
  if (a.ndim() != 1 && a.ndim() != 2) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " must be 1-D (one vector) or 2-D (rows x dim), not " +
                                                 std::to_string(a.ndim()) + "-D");
  }
  const uint64_t cols = a.shape(a.ndim() - 1);
  if (cols != dim) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " has dimension " + std::to_string(cols) +
                                                 "; the index has dim " + std::to_string(dim));
  }
  return VectorBatch{static_cast<const float*>(a.data()), a.ndim() == 1 ? 1 : static_cast<uint64_t>(a.shape(0))};
}

// ids (None: empty) checked against the row count and copied to uint64.
inline std::vector<uint64_t> ids_of(const nb::object& ids, uint64_t rows) {
  std::vector<uint64_t> out;
  if (ids.is_none()) return out;
  AnyArray a;
  if (!nb::try_cast(ids, a, false)) throw nb::type_error("ids must be None or a 1-D NumPy integer array");
  const nb::dlpack::dtype t = a.dtype();
  if (t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::Int) &&
      t.code != static_cast<uint8_t>(nb::dlpack::dtype_code::UInt)) {
    throw nb::type_error("ids must be an integer array");
  }
  if (a.ndim() != 1 || a.shape(0) != rows) {
    throw Error(ErrorCode::kInvalidArgument, "ids must be 1-D with one id per row (" + std::to_string(rows) + ")");
  }
  out.resize(rows);
  const bool is_signed = t.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int);
  const auto* base = static_cast<const char*>(a.data());
  const int64_t step = a.stride(0) * (t.bits / 8);
  for (uint64_t i = 0; i < rows; ++i) {
    const char* p = base + static_cast<int64_t>(i) * step;
    int64_t s = 0;
    uint64_t u = 0;
    switch (t.bits) {
      case 8: is_signed ? s = *reinterpret_cast<const int8_t*>(p) : u = *reinterpret_cast<const uint8_t*>(p); break;
      case 16: is_signed ? s = *reinterpret_cast<const int16_t*>(p) : u = *reinterpret_cast<const uint16_t*>(p); break;
      case 32: is_signed ? s = *reinterpret_cast<const int32_t*>(p) : u = *reinterpret_cast<const uint32_t*>(p); break;
      case 64: is_signed ? s = *reinterpret_cast<const int64_t*>(p) : u = *reinterpret_cast<const uint64_t*>(p); break;
      default: throw nb::type_error("ids must be an integer array of 8 to 64 bits");
    }
    if (is_signed && s < 0) {
      throw Error(ErrorCode::kInvalidArgument, "ids[" + std::to_string(i) + "] is negative (" + std::to_string(s) + ")");
    }
    out[i] = is_signed ? static_cast<uint64_t>(s) : u;
  }
  return out;
}

// A new rows x cols NumPy array owning a C++ buffer.
template <class T>
struct OutArray {
  OutArray(uint64_t rows, uint64_t cols) : rows(rows), cols(cols), data(new T[rows * cols]) {}
  ~OutArray() { delete[] data; }
  nb::object release() {
    T* d = data;
    data = nullptr;
    nb::capsule owner(d, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<2>>(d, {rows, cols}, owner));
  }
  uint64_t rows, cols;
  T* data;
};

}  // namespace calico::py
