// The CPU FP8 linear (fp8_cpu::linear_rows) spreads output features over threads and takes rows
// eight at a time; neither may change a bit: every element must equal backend.h's "FP8 linear"
// definition computed one row and one feature at a time in float32 (the loop below, in the
// reference's order). And its bf16 activation rounding (the yardstick of
// tests/cuda/cuda_fp8_model_parity_test.cpp) must equal quantizing the bf16-rounded rows.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/fp8_cpu.h"
#include "core/dtype.h"
#include "core/fp8.h"

namespace seam {
namespace {

struct Product {
  int64_t n, n_in, n_out;
  Fp8WeightScheme ws;
  Fp8ActScheme act;
  std::vector<float> x, scales, bias;
  std::vector<uint8_t> wq;
  Fp8Weight w() {
    Fp8Weight f;
    f.w = Tensor(wq.data(), DType::fp8_e4m3, Device::cpu, {n_out, n_in});
    f.w_scale = Tensor(scales.data(), DType::f32, Device::cpu, {int64_t(scales.size())});
    if (ws == Fp8WeightScheme::block128) f.w_scale = Tensor(scales.data(), DType::f32, Device::cpu, {n_out, n_in / 128});
    f.w_scheme = ws;
    f.act = act;
    return f;
  }
};

Product make(int64_t n, int64_t n_in, int64_t n_out, Fp8WeightScheme ws, Fp8ActScheme act) {
  Product p{n, n_in, n_out, ws, act, {}, {}, {}, {}};
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t i = 0; i < n * n_in; ++i) p.x.push_back(nd(rng));
  for (int64_t i = 0; i < n_out * n_in; ++i) p.wq.push_back(f32_to_fp8_e4m3(nd(rng) * 64.f));
  const int64_t n_scales = ws == Fp8WeightScheme::per_tensor ? 1 : ws == Fp8WeightScheme::per_channel ? n_out
                                                                                                     : n_out * (n_in / 128);
  for (int64_t i = 0; i < n_scales; ++i) p.scales.push_back(0.001f * float(1 + i % 5));
  for (int64_t j = 0; j < n_out; ++j) p.bias.push_back(0.01f * float(j % 7));
  return p;
}

// The definition, one row and one output feature at a time, in the reference's float32 order.
std::vector<float> definition(Product& p) {
  Fp8Weight w = p.w();
  const int64_t n_groups = p.ws == Fp8WeightScheme::block128 ? p.n_in / 128 : 1, width = p.n_in / n_groups;
  std::vector<float> out(size_t(p.n * p.n_out));
  std::vector<uint8_t> codes(size_t(p.n_in));
  std::vector<float> xs(size_t(p.n_in / 128 + 1));
  for (int64_t i = 0; i < p.n; ++i) {
    fp8_cpu::quantize_row(p.x.data() + i * p.n_in, p.n_in, w, codes.data(), xs.data());
    for (int64_t j = 0; j < p.n_out; ++j) {
      float y = 0.f;
      for (int64_t g = 0; g < n_groups; ++g) {
        float s = 0.f;
        for (int64_t k = g * width; k < (g + 1) * width; ++k)
          s += fp8_e4m3_to_f32(codes[size_t(k)]) * fp8_e4m3_to_f32(p.wq[size_t(j * p.n_in + k)]);
        const float ws = p.ws == Fp8WeightScheme::per_tensor    ? p.scales[0]
                         : p.ws == Fp8WeightScheme::per_channel ? p.scales[size_t(j)]
                                                                : p.scales[size_t(j * n_groups + g)];
        y += xs[p.ws == Fp8WeightScheme::block128 ? size_t(g) : 0] * ws * s;
      }
      out[size_t(i * p.n_out + j)] = y + p.bias[size_t(j)];
    }
  }
  return out;
}

std::vector<float> run(Product& p, bool round_bf16) {
  std::vector<float> out(size_t(p.n * p.n_out));
  fp8_cpu::linear_rows(Tensor(out.data(), DType::f32, Device::cpu, {p.n, p.n_out}),
                       Tensor(p.x.data(), DType::f32, Device::cpu, {p.n, p.n_in}), p.w(),
                       Tensor(p.bias.data(), DType::f32, Device::cpu, {p.n_out}), false, round_bf16 ? 7 : 0);
  return out;
}

// 11 rows (a block of eight and one of three) x 768 features x 1,024: past the threading threshold
// (2^22 multiply-adds a thread), so the features are split whenever the host has two threads.
TEST(Fp8CpuRows, ThreadedRowsEqualTheDefinitionBitForBit) {
  for (auto [ws, act] : {std::pair{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token},
                         std::pair{Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token},
                         std::pair{Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128}}) {
    Product p = make(11, 1024, 768, ws, act);
    const std::vector<float> got = run(p, false), want = definition(p);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << fp8_weight_scheme_name(ws);
  }
}

TEST(Fp8CpuRows, Bf16ActivationRoundingIsQuantizingTheRoundedRows) {
  Product p = make(5, 256, 64, Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token);
  const std::vector<float> plain = run(p, false), rounded = run(p, true);
  for (float v : p.x) EXPECT_EQ(fp8_cpu::round_mantissa(v, 7), bf16_to_f32(f32_to_bf16(v))) << v;
  for (float& v : p.x) v = bf16_to_f32(f32_to_bf16(v));
  const std::vector<float> want = run(p, false);
  EXPECT_EQ(std::memcmp(rounded.data(), want.data(), want.size() * 4), 0);
  // Random rows: some activation's code moves, so the outputs do (the yardstick is not zero).
  EXPECT_NE(std::memcmp(rounded.data(), plain.data(), plain.size() * 4), 0);
}

}  // namespace
}  // namespace seam
