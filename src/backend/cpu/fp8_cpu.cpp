#include "backend/cpu/fp8_cpu.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/op_checks.h"
#include "core/fp8.h"

namespace seam {

namespace fp8_cpu {

void quantize_row(const float* x, int64_t n_in, const Fp8Weight& w, uint8_t* codes, float* scales) {
  const bool grouped = w.act == Fp8ActScheme::dynamic_group128;
  const int64_t width = grouped ? kFp8Group : n_in;
  for (int64_t g = 0, begin = 0; begin < n_in; ++g, begin += width) {
    const int64_t end = std::min(n_in, begin + width);
    float xs;
    if (w.act == Fp8ActScheme::static_per_tensor) {
      xs = w.input_scale.ptr<float>()[0];
    } else {
      float amax = 0.f;
      for (int64_t k = begin; k < end; ++k) amax = std::max(amax, std::fabs(x[k]));
      if (w.act_amax_ub > 0.f) amax = std::min(amax, w.act_amax_ub);
      xs = amax > 0.f ? amax / kFp8E4m3Max : 1.f;
    }
    scales[g] = xs;
    for (int64_t k = begin; k < end; ++k) codes[k] = f32_to_fp8_e4m3(x[k] / xs);
  }
}

void linear_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate) {
  const int64_t n = x.size(0), n_in = x.size(1), n_out = w.w.size(0);
  const int64_t n_groups = w.w_scheme == Fp8WeightScheme::block128 ? (n_in + kFp8Group - 1) / kFp8Group : 1;
  const int64_t width = n_groups == 1 ? n_in : kFp8Group;
  // The weight decoded once per call: a reference, not a fast path.
  std::vector<float> wf(size_t(n_out * n_in));
  const auto* wq = w.w.ptr<const uint8_t>();
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = fp8_e4m3_to_f32(wq[i]);
  const float* ws = w.w_scale.ptr<const float>();
  std::vector<uint8_t> codes(static_cast<size_t>(n_in));
  std::vector<float> xf(static_cast<size_t>(n_in));
  std::vector<float> xs(size_t(std::max<int64_t>(n_groups, (n_in + kFp8Group - 1) / kFp8Group)));
  for (int64_t i = 0; i < n; ++i) {
    quantize_row(x.ptr<float>() + i * x.stride[0], n_in, w, codes.data(), xs.data());
    for (int64_t k = 0; k < n_in; ++k) xf[size_t(k)] = fp8_e4m3_to_f32(codes[size_t(k)]);
    float* o = out.ptr<float>() + i * out.stride[0];
    for (int64_t j = 0; j < n_out; ++j) {
      const float* wr = wf.data() + j * n_in;
      float y = 0.f;
      for (int64_t g = 0; g < n_groups; ++g) {
        const int64_t begin = g * width, end = std::min(n_in, begin + width);
        float s = 0.f;
        for (int64_t k = begin; k < end; ++k) s += xf[size_t(k)] * wr[k];
        float scale;
        switch (w.w_scheme) {
          case Fp8WeightScheme::per_tensor: scale = xs[0] * ws[0]; break;
          case Fp8WeightScheme::per_channel: scale = xs[0] * ws[j]; break;
          default: scale = xs[size_t(g)] * ws[j * n_groups + g]; break;
        }
        y += scale * s;
      }
      if (bias.defined()) y += bias.ptr<float>()[j];
      o[j] = accumulate ? o[j] + y : y;
    }
  }
}

}  // namespace fp8_cpu

void CpuBackend::linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) {
  op_checks::linear_fp8(out, x, w, bias, Device::cpu);
  SEAM_CHECK(x.dtype == DType::f32, "linear_fp8 x: the cpu backend computes in float32, got ", dtype_name(x.dtype));
  launch([=] { fp8_cpu::linear_rows(out, x, w, bias, accumulate); });
}

}  // namespace seam
