#include "backend/cpu/fp8_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/op_checks.h"
#include "core/fp8.h"
#include "core/parallel_rows.h"

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

namespace {

// One output feature j of every row: the reference's arithmetic for out[i][j] (each group's
// sum over k in order from 0, then y += scale * sum over the groups in order, then the bias,
// then the accumulation), with rows taken eight at a time so their independent sums overlap in
// the pipeline. Each element's operations and their order are those of one row alone.
struct Fp8Rows {
  const float* xf;  // [n][n_in] the decoded activation codes
  const float* xs;  // [n][n_xs] the activation scales
  int64_t n, n_in, n_xs, n_groups, width;
};

void output_feature(const Fp8Rows& r, const float* wr, int64_t j, const Fp8Weight& w, const Tensor& out,
                    const Tensor& bias, bool accumulate) {
  const float* ws = w.w_scale.ptr<const float>();
  constexpr int64_t kRows = 8;
  for (int64_t i0 = 0; i0 < r.n; i0 += kRows) {
    const int64_t m = std::min(kRows, r.n - i0);
    float y[kRows] = {};
    for (int64_t g = 0; g < r.n_groups; ++g) {
      const int64_t begin = g * r.width, end = std::min(r.n_in, begin + r.width);
      float s[kRows] = {};
      for (int64_t k = begin; k < end; ++k)
        for (int64_t q = 0; q < m; ++q) s[q] += r.xf[(i0 + q) * r.n_in + k] * wr[k];
      for (int64_t q = 0; q < m; ++q) {
        const float* xs = r.xs + (i0 + q) * r.n_xs;
        float scale;
        switch (w.w_scheme) {
          case Fp8WeightScheme::per_tensor: scale = xs[0] * ws[0]; break;
          case Fp8WeightScheme::per_channel: scale = xs[0] * ws[j]; break;
          default: scale = xs[size_t(g)] * ws[j * r.n_groups + g]; break;
        }
        y[q] += scale * s[q];
      }
    }
    for (int64_t q = 0; q < m; ++q) {
      float v = y[q];
      if (bias.defined()) v += bias.ptr<float>()[j];
      float* o = out.ptr<float>() + (i0 + q) * out.stride[0];
      o[j] = accumulate ? o[j] + v : v;
    }
  }
}

}  // namespace

float round_mantissa(float v, int bits) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return v;  // inf / NaN as they are
  const int drop = 23 - bits;
  const uint32_t rounding = (uint32_t(1) << (drop - 1)) - 1 + ((u >> drop) & 1);  // to nearest, ties to even
  u = (u + rounding) & ~((uint32_t(1) << drop) - 1);
  std::memcpy(&v, &u, 4);
  return v;
}

void linear_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                 int round_act_bits) {
  const int64_t n = x.size(0), n_in = x.size(1), n_out = w.w.size(0);
  const int64_t n_groups = w.w_scheme == Fp8WeightScheme::block128 ? (n_in + kFp8Group - 1) / kFp8Group : 1;
  const int64_t n_xs = std::max<int64_t>(n_groups, (n_in + kFp8Group - 1) / kFp8Group);
  // Every row's activations quantized once, then decoded.
  std::vector<float> xf(static_cast<size_t>(n * n_in)), xs(static_cast<size_t>(n * n_xs)), xr(static_cast<size_t>(n_in));
  std::vector<uint8_t> codes(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x.ptr<float>() + i * x.stride[0];
    if (round_act_bits > 0 && round_act_bits < 23) {
      for (int64_t k = 0; k < n_in; ++k) xr[size_t(k)] = round_mantissa(xi[k], round_act_bits);
      xi = xr.data();
    }
    quantize_row(xi, n_in, w, codes.data(), xs.data() + i * n_xs);
    for (int64_t k = 0; k < n_in; ++k) xf[size_t(i * n_in + k)] = fp8_e4m3_to_f32(codes[size_t(k)]);
  }
  const Fp8Rows r{xf.data(), xs.data(), n, n_in, n_xs, n_groups, n_groups == 1 ? n_in : kFp8Group};
  const auto* wq = w.w.ptr<const uint8_t>();
  // Output features split across threads: each element is computed by one thread exactly as
  // alone, so the result does not depend on the thread count.
  auto features = [&](int64_t j_begin, int64_t j_end) {
    std::vector<float> wr(static_cast<size_t>(n_in));  // weight row j decoded (a reference, not a fast path)
    for (int64_t j = j_begin; j < j_end; ++j) {
      for (int64_t k = 0; k < n_in; ++k) wr[size_t(k)] = fp8_e4m3_to_f32(wq[j * n_in + k]);
      output_feature(r, wr.data(), j, w, out, bias, accumulate);
    }
  };
  // At least 2^22 multiply-adds a thread.
  parallel_rows(n_out, 1 + (int64_t(1) << 22) / std::max<int64_t>(1, n_in * n), features);
}

}  // namespace fp8_cpu

void CpuBackend::linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) {
  op_checks::linear_fp8(out, x, w, bias, Device::cpu);
  SEAM_CHECK(x.dtype == DType::f32, "linear_fp8 x: the cpu backend computes in float32, got ", dtype_name(x.dtype));
  // The switch is read when the op runs, so recorded graphs follow it too.
  launch([=, this] { fp8_cpu::linear_rows(out, x, w, bias, accumulate, fp8_act_round_bits_); });
}

}  // namespace seam
