// --quantization fp8's load-time weight quantization on the CPU backend (Backend::
// quantize_fp8_per_channel's host default, the path CI runs): quantize_parts_fp8 over every
// kind of part, staged whole, a row at a time and in chunks that do not divide the parts, and
// Linear::load_fp8, equal to core/fp8.h's definition bit for bit; the op's argument checks.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "fp8_online_quantize_cases.h"

namespace seam::test {
namespace {

TEST(Fp8OnlineQuantize, PartsEqualTheDefinitionAtEveryStageSize) {
  CpuBackend cpu;
  std::mt19937 rng(7);
  const Fp8OnlineParts p = fp8_online_parts(200, rng);
  check_quantize_parts(cpu, p, int64_t(1) << 24, "whole parts");
  check_quantize_parts(cpu, p, 1, "one row at a time");
  check_quantize_parts(cpu, p, 3 * 200 + 17, "3-row chunks");
}

TEST(Fp8OnlineQuantize, LinearLoadEqualsTheDefinition) {
  CpuBackend cpu;
  std::mt19937 rng(8);
  check_linear_load(cpu, fp8_online_parts(96, rng), "Linear::load_fp8");
}

TEST(Fp8OnlineQuantize, OpRefusesBadArguments) {
  CpuBackend cpu;
  std::vector<float> w(6, 1.f), s(2), s3(3);
  std::vector<uint8_t> c(6);
  const Tensor wt(w.data(), DType::f32, Device::cpu, {2, 3});
  const Tensor ct(c.data(), DType::fp8_e4m3, Device::cpu, {2, 3});
  const Tensor st(s.data(), DType::f32, Device::cpu, {2});
  auto expect_error = [&](const Tensor& codes, const Tensor& scales, const Tensor& x, const char* needle) {
    try {
      cpu.quantize_fp8_per_channel(codes, scales, x);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(ct, Tensor(s3.data(), DType::f32, Device::cpu, {3}), wt, "scales");
  expect_error(Tensor(c.data(), DType::i32, Device::cpu, {2, 3}), st, wt, "codes");
  expect_error(ct, st, Tensor(w.data(), DType::i32, Device::cpu, {2, 3}), "dtype");
  cpu.quantize_fp8_per_channel(ct, st, wt);  // all ones: scale 1 / 448, code 448
  EXPECT_EQ(s[0], 1.f / 448.f);
  EXPECT_EQ(c[5], 0x7e);
}

}  // namespace
}  // namespace seam::test
