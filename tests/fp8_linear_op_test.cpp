// FP8: the E4M3 codec (core/fp8.h) against an independent float64 definition of the format,
// and the CPU backend's linear_fp8 (the reference every GPU FP8 GEMM is tested against)
// against a straightforward float64 loop of backend.h's "FP8 linear" definition.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/fp8.h"

namespace seam {
namespace {

// E4M3FN by its definition: (-1)^s * 2^(e-7) * (1 + m/8), subnormal 2^-6 * m/8, S.1111.111 NaN.
double e4m3_value(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return NAN;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

TEST(Fp8Codec, DecodesEveryCodeExactly) {
  for (int c = 0; c < 256; ++c) {
    const double want = e4m3_value(c);
    const float got = fp8_e4m3_to_f32(uint8_t(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(double(got), want) << "code " << c;
      EXPECT_EQ(std::signbit(got), c >= 128) << c;  // -0 is 0x80
    }
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), 0x1p-6f);
}

TEST(Fp8Codec, EncodeRoundsToNearestEvenAndSaturates) {
  // Every finite code round-trips, and every midpoint between neighbours goes to the even code;
  // points just off the midpoint go to the nearer one.
  for (int c = 0; c < 0x7e; ++c) {
    const double a = e4m3_value(c), b = e4m3_value(c + 1), mid = (a + b) / 2;
    for (int s : {1, -1}) {
      const uint8_t sign = s < 0 ? 0x80 : 0;
      ASSERT_EQ(f32_to_fp8_e4m3(float(s * a)), uint8_t(sign | c)) << c;
      const int even = (c % 2 == 0) ? c : c + 1;
      ASSERT_EQ(f32_to_fp8_e4m3(float(s * mid)), uint8_t(sign | even)) << "midpoint above code " << c;
      ASSERT_EQ(f32_to_fp8_e4m3(std::nextafter(float(s * mid), 0.f)), uint8_t(sign | c)) << c;
      ASSERT_EQ(f32_to_fp8_e4m3(std::nextafter(float(s * mid), float(s * 1e9))), uint8_t(sign | (c + 1))) << c;
    }
  }
  // Saturation: beyond 448 (infinity included) stays at +-448, never NaN.
  for (float v : {448.f, 449.f, 464.f, 480.f, 1e6f, INFINITY}) {
    EXPECT_EQ(f32_to_fp8_e4m3(v), 0x7e) << v;
    EXPECT_EQ(f32_to_fp8_e4m3(-v), 0xfe) << v;
  }
  EXPECT_EQ(f32_to_fp8_e4m3(NAN), 0x7f);
  EXPECT_EQ(f32_to_fp8_e4m3(-0.f), 0x80);
  EXPECT_EQ(f32_to_fp8_e4m3(0x1p-11f), 0x00);   // below half the smallest subnormal: 0
  EXPECT_EQ(f32_to_fp8_e4m3(0x1p-10f), 0x00);   // exactly half: ties to even (0)
  EXPECT_EQ(f32_to_fp8_e4m3(0x1.8p-10f), 0x01);
  EXPECT_EQ(f32_to_fp8_e4m3(0x1.8p-9f), 0x02);  // 1.5 ulps: ties to even (2)
}

// ---- the op ----

struct Case {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t n, in, out;
  float ub = 0.f;
  bool bias = false, accumulate = false;
};

// The definition in float64: dequantised weights, quantised activations, product, scales.
std::vector<double> reference(const Case& c, const std::vector<float>& x, const std::vector<uint8_t>& wq,
                              const std::vector<float>& ws, float input_scale, const std::vector<float>& bias,
                              const std::vector<float>& out0) {
  const int64_t n_kb = (c.in + 127) / 128;
  std::vector<double> out(size_t(c.n * c.out));
  for (int64_t i = 0; i < c.n; ++i) {
    // Activation scales per group (the whole row or 128 columns), computed as the op defines.
    const int64_t width = c.act == Fp8ActScheme::dynamic_group128 ? 128 : c.in;
    std::vector<double> xd(size_t(c.in)), xs(size_t(n_kb + 1));
    for (int64_t g = 0; g * width < c.in; ++g) {
      float s = input_scale;
      if (c.act != Fp8ActScheme::static_per_tensor) {
        float amax = 0.f;
        for (int64_t k = g * width; k < std::min(c.in, (g + 1) * width); ++k)
          amax = std::max(amax, std::fabs(x[size_t(i * c.in + k)]));
        if (c.ub > 0) amax = std::min(amax, c.ub);
        s = amax > 0 ? amax / 448.f : 1.f;
      }
      xs[size_t(g)] = s;
      for (int64_t k = g * width; k < std::min(c.in, (g + 1) * width); ++k)
        xd[size_t(k)] = e4m3_value(f32_to_fp8_e4m3(x[size_t(i * c.in + k)] / s)) * s;
    }
    for (int64_t o = 0; o < c.out; ++o) {
      double acc = 0;
      for (int64_t k = 0; k < c.in; ++k) {
        double wsc = c.w == Fp8WeightScheme::per_tensor    ? ws[0]
                     : c.w == Fp8WeightScheme::per_channel ? ws[size_t(o)]
                                                           : ws[size_t(o * n_kb + k / 128)];
        acc += xd[size_t(k)] * e4m3_value(wq[size_t(o * c.in + k)]) * wsc;
      }
      if (c.bias) acc += bias[size_t(o)];
      if (c.accumulate) acc += out0[size_t(i * c.out + o)];
      out[size_t(i * c.out + o)] = acc;
    }
  }
  return out;
}

void run_case(const Case& c) {
  CpuBackend be;
  std::mt19937 rng(uint32_t(c.in * 7 + c.out));
  std::normal_distribution<float> nd(0.f, 1.f);
  // x rows strided (a view into a wider buffer), with one all-zero row and one large outlier.
  const int64_t stride = c.in + 5;
  std::vector<float> xbuf(size_t(c.n * stride), 123.f), x(size_t(c.n * c.in));
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t k = 0; k < c.in; ++k) {
      float v = i == 1 ? 0.f : nd(rng) * (1.f + float(i));
      if (i == 2 && k == 3) v = 900.f;  // saturates a static scale; bounded by ub if set
      x[size_t(i * c.in + k)] = v;
      xbuf[size_t(i * stride + k)] = v;
    }
  std::vector<uint8_t> wq(size_t(c.out * c.in));
  for (auto& b : wq) {
    do b = uint8_t(rng()); while ((b & 0x7f) == 0x7f);  // any finite code
  }
  const int64_t n_kb = (c.in + 127) / 128;
  std::vector<float> ws(c.w == Fp8WeightScheme::per_tensor    ? 1
                        : c.w == Fp8WeightScheme::per_channel ? size_t(c.out)
                                                              : size_t(c.out * n_kb));
  for (auto& s : ws) s = 0.001f + 0.01f * std::fabs(nd(rng));
  float input_scale = 0.02f;
  std::vector<float> bias(size_t(c.out)), out(size_t(c.n * c.out));
  for (auto& b : bias) b = nd(rng);
  for (auto& o : out) o = nd(rng);
  const std::vector<float> out0 = out;

  Fp8Weight w;
  w.w = Tensor(wq.data(), DType::fp8_e4m3, Device::cpu, {c.out, c.in});
  w.w_scale = c.w == Fp8WeightScheme::block128 ? Tensor(ws.data(), DType::f32, Device::cpu, {c.out, n_kb})
                                               : Tensor(ws.data(), DType::f32, Device::cpu, {int64_t(ws.size())});
  w.w_scheme = c.w;
  w.act = c.act;
  w.act_amax_ub = c.ub;
  if (c.act == Fp8ActScheme::static_per_tensor) w.input_scale = Tensor(&input_scale, DType::f32, Device::cpu, {1});
  Tensor xt(xbuf.data(), DType::f32, Device::cpu, {c.n, stride});
  xt = xt.slice_cols(0, c.in);
  Tensor bt = c.bias ? Tensor(bias.data(), DType::f32, Device::cpu, {c.out}) : Tensor();
  be.linear_fp8(Tensor(out.data(), DType::f32, Device::cpu, {c.n, c.out}), xt, w, bt, c.accumulate);

  const std::vector<double> want = reference(c, x, wq, ws, input_scale, bias, out0);
  // The op and the loop agree up to float32 summation: each product and each quantised value is
  // exact in both, so the bound is the float32 rounding of sums of |terms|.
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t o = 0; o < c.out; ++o) {
      double mag = 0;
      for (int64_t k = 0; k < c.in; ++k) mag += std::fabs(double(x[size_t(i * c.in + k)]));
      const double tol = 1e-5 * (std::fabs(want[size_t(i * c.out + o)]) + 1.0) + 1e-6 * mag;
      ASSERT_NEAR(out[size_t(i * c.out + o)], want[size_t(i * c.out + o)], tol) << "row " << i << " col " << o;
    }
  // The all-zero row (dynamic scale 1) gives exactly bias (+ out0).
  for (int64_t o = 0; o < c.out; ++o)
    EXPECT_EQ(out[size_t(c.out + o)], (c.bias ? bias[size_t(o)] : 0.f) + (c.accumulate ? out0[size_t(c.out + o)] : 0.f));
}

TEST(Fp8LinearOp, PerTensorDynamicPerToken) { run_case({Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, 4, 96, 40}); }
TEST(Fp8LinearOp, PerChannelDynamicWithBiasAccumulate) {
  run_case({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 5, 72, 33, 0.f, true, true});
}
TEST(Fp8LinearOp, PerChannelAmaxUpperBound) {
  run_case({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 3, 64, 17, 50.f});
}
TEST(Fp8LinearOp, PerTensorStaticSaturates) {
  run_case({Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 3, 80, 21, 0.f, true, false});
}
TEST(Fp8LinearOp, Block128PartialBlocks) {
  run_case({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 4, 300, 140, 0.f, false, true});
}

TEST(Fp8LinearOp, ChecksArguments) {
  CpuBackend be;
  std::vector<uint8_t> wq(8 * 16);
  std::vector<float> ws(8, 1.f), x(2 * 16), out(2 * 8);
  Fp8Weight w;
  w.w = Tensor(wq.data(), DType::fp8_e4m3, Device::cpu, {8, 16});
  w.w_scale = Tensor(ws.data(), DType::f32, Device::cpu, {8});
  w.w_scheme = Fp8WeightScheme::per_channel;
  Tensor xt(x.data(), DType::f32, Device::cpu, {2, 16}), ot(out.data(), DType::f32, Device::cpu, {2, 8});
  auto expect_error = [&](const Fp8Weight& bad, Tensor o, const std::string& what) {
    try {
      be.linear_fp8(o, xt, bad, Tensor(), false);
      FAIL() << "no error, expected " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  be.linear_fp8(ot, xt, w, Tensor(), false);  // valid
  Fp8Weight b = w;
  b.w_scheme = Fp8WeightScheme::per_tensor;
  expect_error(b, ot, "per-tensor w_scale: shape [8], expected [1]");
  b = w;
  b.w_scheme = Fp8WeightScheme::block128;
  b.act = Fp8ActScheme::dynamic_group128;
  expect_error(b, ot, "block w_scale: shape [8], expected [8, 1]");
  b = w;
  b.act = Fp8ActScheme::dynamic_group128;
  expect_error(b, ot, "1x128 activation groups need block weights");
  b = w;
  b.act = Fp8ActScheme::static_per_tensor;
  expect_error(b, ot, "linear_fp8 input_scale: tensor is undefined");
  b = w;
  b.w = Tensor(wq.data(), DType::f32, Device::cpu, {8, 4});
  expect_error(b, ot, "linear_fp8 w: dtype float32, expected float8_e4m3fn");
  expect_error(w, Tensor(out.data(), DType::f32, Device::cpu, {2, 7}), "linear_fp8 out: shape [2, 7], expected [2, 8]");
  expect_error(w, Tensor(x.data(), DType::f32, Device::cpu, {2, 8}), "linear_fp8: out overlaps x");
}

}  // namespace
}  // namespace seam
