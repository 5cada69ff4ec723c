#include "model/fp8_dequant.h"

#include <cstring>

#include "core/error.h"
#include "core/fp8.h"
#include "core/parallel_rows.h"

namespace seam {

namespace {

// Rows [begin, end) of the dequantized weight into `out` (row-major, n_in a row) in `dtype`:
// each row computed in float32 as the definition says, then converted (a float32 `out` is
// written directly).
void dequantize_rows(const HostTensor& codes, const std::vector<float>& ws, Fp8WeightScheme scheme, int64_t begin,
                     int64_t end, DType dtype, void* out) {
  const int64_t n_in = codes.shape[1], n_kb = (n_in + kFp8Group - 1) / kFp8Group;
  const uint8_t* q = static_cast<const uint8_t*>(codes.data);
  const size_t esize = dtype_size(dtype);
  std::vector<float> row_f32(dtype == DType::f32 ? 0 : size_t(n_in));
  for (int64_t o = begin; o < end; ++o) {
    const uint8_t* row = q + o * n_in;
    float* dst = dtype == DType::f32 ? static_cast<float*>(out) + o * n_in : row_f32.data();
    const int64_t stored_row = codes.row_offset + o;  // the scales are the stored tensor's
    for (int64_t k = 0; k < n_in; ++k) {
      float s = 0.f;
      switch (scheme) {
        case Fp8WeightScheme::per_tensor: s = ws[0]; break;
        case Fp8WeightScheme::per_channel: s = ws[size_t(stored_row)]; break;
        case Fp8WeightScheme::block128: s = ws[size_t((stored_row / kFp8Group) * n_kb + k / kFp8Group)]; break;
      }
      dst[k] = fp8_e4m3_to_f32(row[k]) * s;  // one float32 rounding, as the definition says
    }
    if (dtype != DType::f32)
      convert_from_f32(row_f32.data(), dtype, static_cast<uint8_t*>(out) + size_t(o * n_in) * esize, size_t(n_in));
  }
}

// The scale values of `codes` under `scheme`, as float32 (checked against its shape).
std::vector<float> scale_values(const HostTensor& codes, const Fp8Scales& scales, Fp8WeightScheme scheme) {
  SEAM_ASSERT(codes.dtype == DType::fp8_e4m3 && codes.shape.size() == 2 && !codes.random, codes.name);
  const int64_t rows_end = codes.row_offset + codes.shape[0], n_in = codes.shape[1];  // rows of the stored tensor
  const int64_t n_kb = (n_in + kFp8Group - 1) / kFp8Group;
  std::vector<float> ws(size_t(scales.weight_scale.numel()));
  convert_to_f32(scales.weight_scale.data, scales.weight_scale.dtype, ws.data(), ws.size());
  switch (scheme) {
    case Fp8WeightScheme::per_tensor: SEAM_ASSERT(ws.size() == 1, codes.name); break;
    case Fp8WeightScheme::per_channel: SEAM_ASSERT(int64_t(ws.size()) >= rows_end, codes.name); break;
    case Fp8WeightScheme::block128:
      SEAM_ASSERT(int64_t(ws.size()) >= ((rows_end + kFp8Group - 1) / kFp8Group) * n_kb, codes.name);
      break;
  }
  return ws;
}

}  // namespace

void dequantize_fp8_weight(const HostTensor& codes, const Fp8Scales& scales, Fp8WeightScheme scheme, DType dtype,
                           void* out) {
  const std::vector<float> ws = scale_values(codes, scales, scheme);
  parallel_rows(codes.shape[0], 64, [&](int64_t begin, int64_t end) {
    dequantize_rows(codes, ws, scheme, begin, end, dtype, out);
  });
}

DeviceWeight upload_fp8_dequantized(Backend& backend, const std::vector<const HostTensor*>& parts,
                                    const std::vector<const Fp8Scales*>& scales, Fp8WeightScheme scheme, DType dtype) {
  SEAM_ASSERT(!parts.empty() && scales.size() == parts.size());
  const int64_t cols = parts[0]->shape[1];
  int64_t rows = 0;
  for (const HostTensor* p : parts) {
    SEAM_ASSERT(p->shape.size() == 2 && p->shape[1] == cols && !p->random, p->name);
    rows += p->shape[0];
  }
  DeviceWeight w = DeviceWeight::allocate(backend, dtype, {rows, cols});
  const size_t esize = dtype_size(dtype);
  std::vector<float> f32;
  std::vector<uint8_t> staged;
  uint8_t* dst = static_cast<uint8_t*>(w.tensor().data);
  for (size_t i = 0; i < parts.size(); ++i) {
    const HostTensor& p = *parts[i];
    const size_t n = size_t(p.numel());
    staged.resize(n * esize);
    if (scales[i]) {
      dequantize_fp8_weight(p, *scales[i], scheme, dtype, staged.data());  // over the host's threads
    } else if (p.dtype == dtype) {
      std::memcpy(staged.data(), p.data, n * esize);
    } else {
      SEAM_ASSERT(p.dtype != DType::fp8_e4m3, p.name, ": an F8_E4M3 part without its scales");
      f32.resize(n);
      convert_to_f32(p.data, p.dtype, f32.data(), n);
      convert_from_f32(f32.data(), dtype, staged.data(), n);
    }
    backend.copy_h2d(dst, staged.data(), staged.size());
    backend.synchronize();  // `staged` is reused by the next part
    dst += staged.size();
  }
  return w;
}

}  // namespace seam
