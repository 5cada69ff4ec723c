// The argument-check helpers op_checks.cpp and moe_op_checks.cpp share: device, dtype,
// index and row-layout checks, and whether two views overlap. Each failure is a seam::Error
// naming `what`.
#pragma once
#include <cstdint>
#include <utility>

#include "backend/backend.h"

namespace seam::op_checks::detail {

inline void on(const Tensor& t, Device dev, const char* what) {
  SEAM_CHECK(t.defined(), what, ": tensor is undefined");
  SEAM_CHECK(t.device == dev, what, ": tensor is not on the ", device_name(dev), " device");
}
inline bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
inline void floating(const Tensor& t, Device dev, const char* what) {
  on(t, dev, what);
  SEAM_CHECK(is_float(t.dtype), what, ": dtype ", dtype_name(t.dtype), ", expected float32, float16 or bfloat16");
}
inline void same(const Tensor& t, DType d, Device dev, const char* what) {
  on(t, dev, what);
  check_dtype(t, d, what);
}
inline void index(const Tensor& t, int64_t n, Device dev, const char* what) {
  same(t, DType::i32, dev, what);
  SEAM_CHECK(t.ndim == 1 && t.size(0) >= n && t.contiguous(), what, ": expected [", n, "] i32, got ", t.shape_str());
}
// A per-row parameter vector: at least n contiguous values of dtype d.
inline void params(const Tensor& t, DType d, int64_t n, Device dev, const char* what) {
  same(t, d, dev, what);
  SEAM_CHECK(t.ndim == 1 && t.size(0) >= n && t.contiguous(), what, ": expected [", n, "] ", dtype_name(d), ", got ",
             t.shape_str());
}
// A 2-D view with unit column stride (rows may be strided).
inline void rows(const Tensor& t, const char* what) {
  SEAM_CHECK(t.ndim == 2 && t.rows_contiguous(), what, ": expected [n, d] with packed rows, got ", t.shape_str());
}

// The bytes a view spans, first to last element.
inline std::pair<uintptr_t, uintptr_t> span(const Tensor& t) {
  int64_t last = 0;
  for (int i = 0; i < t.ndim; ++i) last += (t.size(i) - 1) * t.stride[i];
  const auto begin = reinterpret_cast<uintptr_t>(t.data);
  return {begin, begin + uintptr_t(last + 1) * dtype_size(t.dtype)};
}
inline bool overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

}  // namespace seam::op_checks::detail
