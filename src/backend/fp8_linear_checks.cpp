// The FP8 linear's boundary checks (op_checks::linear_fp8, quantize_fp8_per_channel), its scheme
// names, the Backend default for backends without FP8 GEMMs and the host default of the load-time
// weight quantization.
#include <vector>

#include "backend/backend.h"
#include "backend/op_checks.h"
#include "core/fp8.h"

namespace seam {

const char* fp8_weight_scheme_name(Fp8WeightScheme s) {
  switch (s) {
    case Fp8WeightScheme::per_tensor: return "per-tensor";
    case Fp8WeightScheme::per_channel: return "per-channel";
    case Fp8WeightScheme::block128: return "128x128 block";
  }
  return "?";
}

const char* fp8_act_scheme_name(Fp8ActScheme s) {
  switch (s) {
    case Fp8ActScheme::dynamic_per_token: return "dynamic per-token";
    case Fp8ActScheme::dynamic_group128: return "dynamic 1x128 group";
    case Fp8ActScheme::static_per_tensor: return "static per-tensor";
  }
  return "?";
}

void Backend::linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) {
  (void)out, (void)x, (void)w, (void)bias, (void)accumulate;
  throw Error(detail::concat("linear_fp8: the ", name(), " backend has no FP8 linear"));
}

void Backend::quantize_fp8_per_channel(Tensor codes, Tensor scales, Tensor w) {
  op_checks::quantize_fp8_per_channel(codes, scales, w, device());
  const int64_t n = w.size(0), n_in = w.size(1);
  std::vector<uint8_t> raw(w.nbytes());
  copy_d2h(raw.data(), w.data, raw.size());
  synchronize();
  std::vector<float> f32(size_t(n * n_in));
  convert_to_f32(raw.data(), w.dtype, f32.data(), f32.size());
  std::vector<uint8_t> c(f32.size());
  std::vector<float> s(static_cast<size_t>(n));
  seam::quantize_fp8_per_channel(f32.data(), n, n_in, c.data(), s.data());
  copy_h2d(codes.data, c.data(), c.size());
  copy_h2d(scales.data, s.data(), s.size() * sizeof(float));
  synchronize();  // c and s die at return
}

namespace op_checks {

void quantize_fp8_per_channel(const Tensor& codes, const Tensor& scales, const Tensor& w, Device dev) {
  for (const Tensor* t : {&codes, &scales, &w}) {
    SEAM_CHECK(t->defined(), "quantize_fp8_per_channel: tensor is undefined");
    SEAM_CHECK(t->device == dev, "quantize_fp8_per_channel: tensor is not on the ", device_name(dev), " device");
    SEAM_CHECK(t->contiguous(), "quantize_fp8_per_channel: tensors must be contiguous, got ", t->shape_str());
  }
  SEAM_CHECK(w.dtype == DType::f32 || w.dtype == DType::f16 || w.dtype == DType::bf16,
             "quantize_fp8_per_channel w: dtype ", dtype_name(w.dtype), ", expected float32, float16 or bfloat16");
  SEAM_CHECK(w.ndim == 2, "quantize_fp8_per_channel w: expected [n, in], got ", w.shape_str());
  check_dtype(codes, DType::fp8_e4m3, "quantize_fp8_per_channel codes");
  check_dtype(scales, DType::f32, "quantize_fp8_per_channel scales");
  check_shape(codes, {w.size(0), w.size(1)}, "quantize_fp8_per_channel codes");
  check_shape(scales, {w.size(0)}, "quantize_fp8_per_channel scales");
}


void linear_fp8(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, Device dev) {
  auto on = [&](const Tensor& t, const char* what) {
    SEAM_CHECK(t.defined(), "linear_fp8 ", what, ": tensor is undefined");
    SEAM_CHECK(t.device == dev, "linear_fp8 ", what, ": tensor is not on the ", device_name(dev), " device");
  };
  on(x, "x");
  on(out, "out");
  on(w.w, "w");
  on(w.w_scale, "w_scale");
  SEAM_CHECK(x.dtype == DType::f32 || x.dtype == DType::f16 || x.dtype == DType::bf16, "linear_fp8 x: dtype ",
             dtype_name(x.dtype), ", expected float32, float16 or bfloat16");
  check_dtype(out, x.dtype, "linear_fp8 out");
  check_dtype(w.w, DType::fp8_e4m3, "linear_fp8 w");
  check_dtype(w.w_scale, DType::f32, "linear_fp8 w_scale");
  SEAM_CHECK(x.ndim == 2 && x.rows_contiguous(), "linear_fp8 x: expected [n, in] with packed rows, got ",
             x.shape_str());
  SEAM_CHECK(out.ndim == 2 && out.rows_contiguous(), "linear_fp8 out: expected [n, out] with packed rows, got ",
             out.shape_str());
  SEAM_CHECK(w.w.ndim == 2 && w.w.contiguous(), "linear_fp8 w: expected contiguous [out, in], got ", w.w.shape_str());
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
  check_shape(out, {x.size(0), n_out}, "linear_fp8 out");
  SEAM_CHECK(x.size(1) == n_in, "linear_fp8: x has ", x.size(1), " columns, w has ", n_in);
  SEAM_CHECK(w.w_scale.contiguous(), "linear_fp8 w_scale: must be contiguous");
  switch (w.w_scheme) {
    case Fp8WeightScheme::per_tensor: check_shape(w.w_scale, {1}, "linear_fp8 per-tensor w_scale"); break;
    case Fp8WeightScheme::per_channel: check_shape(w.w_scale, {n_out}, "linear_fp8 per-channel w_scale"); break;
    case Fp8WeightScheme::block128:
      check_shape(w.w_scale, {n_out, (n_in + kFp8Group - 1) / kFp8Group}, "linear_fp8 block w_scale");
      SEAM_CHECK(w.act == Fp8ActScheme::dynamic_group128,
                 "linear_fp8: block weights take dynamic 1x128 activation groups, got ", fp8_act_scheme_name(w.act));
      break;
  }
  if (w.w_scale_blocks.defined()) {
    on(w.w_scale_blocks, "w_scale_blocks");
    SEAM_CHECK(w.w_scheme == Fp8WeightScheme::block128, "linear_fp8 w_scale_blocks: only for block weights, got ",
               fp8_weight_scheme_name(w.w_scheme));
    check_dtype(w.w_scale_blocks, DType::f32, "linear_fp8 w_scale_blocks");
    SEAM_CHECK(w.w_scale_blocks.contiguous(), "linear_fp8 w_scale_blocks: must be contiguous");
    check_shape(w.w_scale_blocks, {(n_out + kFp8Group - 1) / kFp8Group, (n_in + kFp8Group - 1) / kFp8Group},
                "linear_fp8 w_scale_blocks");
  }
  SEAM_CHECK(w.act != Fp8ActScheme::dynamic_group128 || w.w_scheme == Fp8WeightScheme::block128,
             "linear_fp8: 1x128 activation groups need block weights, got ", fp8_weight_scheme_name(w.w_scheme));
  if (w.act == Fp8ActScheme::static_per_tensor) {
    on(w.input_scale, "input_scale");
    check_dtype(w.input_scale, DType::f32, "linear_fp8 input_scale");
    check_shape(w.input_scale, {1}, "linear_fp8 input_scale");
  }
  SEAM_CHECK(w.act_amax_ub >= 0.f, "linear_fp8: act_amax_ub must be >= 0, got ", w.act_amax_ub);
  if (bias.defined()) {
    on(bias, "bias");
    check_dtype(bias, out.dtype, "linear_fp8 bias");
    SEAM_CHECK(bias.contiguous(), "linear_fp8 bias: must be contiguous");
    check_shape(bias, {n_out}, "linear_fp8 bias");
  }
  // out must not overlap x (the product reads x while it writes out).
  const auto lo = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data); };
  const auto hi = [](const Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.data) +
           uintptr_t(((t.size(0) - 1) * t.stride[0] + t.size(1)) * int64_t(dtype_size(t.dtype)));
  };
  SEAM_CHECK(x.numel() == 0 || out.numel() == 0 || lo(out) >= hi(x) || lo(x) >= hi(out),
             "linear_fp8: out overlaps x");
}

}  // namespace op_checks
}  // namespace seam
