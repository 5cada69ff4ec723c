// Tensor: a small non-owning view (pointer, dtype, shape, strides, device).
// Ops take views and check shapes at their boundary. Strides are in elements;
// views into a fused buffer (q/k/v inside qkv) have a row stride larger than
// their row width, so ops that accept such views say so.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace seam {

enum class Device : uint8_t { cpu, cuda };

inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

constexpr int kMaxDims = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> stride{};  // in elements

  Tensor() = default;
  // A contiguous (row-major) view.
  Tensor(void* p, DType t, Device d, std::initializer_list<int64_t> dims) : data(p), dtype(t), device(d) {
    SEAM_ASSERT(dims.size() <= kMaxDims);
    ndim = int(dims.size());
    int i = 0;
    for (int64_t v : dims) shape[i++] = v;
    int64_t s = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      stride[k] = s;
      s *= shape[k];
    }
  }

  bool defined() const { return data != nullptr; }
  int64_t size(int d) const { return shape[d < 0 ? ndim + d : d]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype); }
  bool contiguous() const {
    int64_t s = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      if (shape[k] != 1 && stride[k] != s) return false;
      s *= shape[k];
    }
    return true;
  }
  // True when every dim but the first is packed (rows may be strided).
  bool rows_contiguous() const {
    int64_t s = 1;
    for (int k = ndim - 1; k >= 1; --k) {
      if (shape[k] != 1 && stride[k] != s) return false;
      s *= shape[k];
    }
    return true;
  }
  template <typename T>
  T* ptr() const { return static_cast<T*>(data); }

  // The first n rows (dim 0), same strides.
  Tensor rows(int64_t n) const {
    SEAM_ASSERT(n <= shape[0], "rows(", n, ") of ", shape[0]);
    Tensor t = *this;
    t.shape[0] = n;
    return t;
  }
  // Rows [begin, begin+n).
  Tensor slice_rows(int64_t begin, int64_t n) const {
    SEAM_ASSERT(begin + n <= shape[0]);
    Tensor t = rows(0);
    t.data = static_cast<char*>(data) + begin * stride[0] * int64_t(dtype_size(dtype));
    t.shape[0] = n;
    return t;
  }
  // Columns [begin, begin+n) of a 2-D view: a strided view into a fused buffer.
  Tensor slice_cols(int64_t begin, int64_t n) const {
    SEAM_ASSERT(ndim == 2 && begin + n <= shape[1]);
    Tensor t = *this;
    t.data = static_cast<char*>(data) + begin * stride[1] * int64_t(dtype_size(dtype));
    t.shape[1] = n;
    return t;
  }
  // Splits the last dim of a 2-D view [n, a*b] into [n, a, b] (row stride kept).
  Tensor unflatten_last(int64_t a, int64_t b) const {
    SEAM_ASSERT(ndim == 2 && shape[1] == a * b && stride[1] == 1);
    Tensor t = *this;
    t.ndim = 3;
    t.shape = {shape[0], a, b, 0};
    t.stride = {stride[0], b, 1, 0};
    return t;
  }
  // Reinterprets a contiguous view with a new shape.
  Tensor view(std::initializer_list<int64_t> dims) const {
    SEAM_ASSERT(contiguous(), "view() of a strided tensor");
    Tensor t(data, dtype, device, dims);
    SEAM_ASSERT(t.numel() == numel(), "view() changes numel");
    return t;
  }
  std::string shape_str() const {
    std::string s = "[";
    for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
};

// Shape checks used at op boundaries.
inline void check_shape(const Tensor& t, std::initializer_list<int64_t> dims, const char* what) {
  bool ok = t.ndim == int(dims.size());
  int i = 0;
  for (int64_t d : dims) {
    if (ok && d >= 0 && t.shape[i] != d) ok = false;
    ++i;
  }
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : dims) want += (i++ ? ", " : "") + (d < 0 ? std::string("*") : std::to_string(d));
    throw Error(detail::concat(what, ": shape ", t.shape_str(), ", expected ", want, "]"));
  }
}
inline void check_dtype(const Tensor& t, DType d, const char* what) {
  SEAM_CHECK(t.dtype == d, what, ": dtype ", dtype_name(t.dtype), ", expected ", dtype_name(d));
}

}  // namespace seam
