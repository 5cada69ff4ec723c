// The yardstick of tests/cuda/cuda_fp8_model_parity_test.cpp on the tiny model's FP8 checkpoints
// (CPU backend): Y(m) = rel_err of the float32 reference's last-token logits with every FP8
// linear's activations rounded to m mantissa bits before quantization
// (CpuBackend::set_fp8_act_round_bits) against the reference; Y(7) (bfloat16) is the yardstick.
// The GPU bound (float32: 2 Y(7) + 1e-4) rests on one premise that can be checked here, where
// perturbations of each size can be made: a smaller rounding change of the activations (the GPU's
// float32 order, its tensor-core accumulation) moves the logits by no more than 2 Y(7). So:
//  - Y(7) > 0 (a 2^-9 rounding moves some E4M3 codes one step: the yardstick is real);
//  - Y(10), Y(13), Y(16) <= 2 Y(7);
//  - the switch turns off cleanly: the reference run again equals the first run bit for bit.
// Measured (2026-12-02): on the multi-token prompts the logits move about as much whatever the
// bits (Y(16) between 0 and 1.14 Y(7)): a flipped code moves every output of its linear a little,
// some of those flip in turn, and the cascade makes the logits a fresh draw of the FP8 noise (a
// random-weight 4-layer 1024-wide model: 0.059..0.084 for 7 to 19 bits); on the 1-token prompt,
// where a small rounding may seed no flip, Y falls with it (ct-channel: 5.3e-3, 2.2e-4, 4.1e-5,
// 2.2e-6).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "hf_reference.h"
#include "model/fp8_export.h"
#include "runtime/model_runner.h"
#include "test_util.h"

namespace seam::test {
namespace {

std::vector<RefPrompt> prompts(int vocab) {
  std::vector<RefPrompt> out;
  for (int n : {1, 17, 64}) {
    RefPrompt p;
    for (int i = 0; i < n; ++i) p.ids.push_back(int32_t((i * 7919 + n * 31 + 1) % vocab));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::vector<float>> logits_of(Engine& engine, const std::vector<RefPrompt>& p) {
  return run_logits(EngineBenchAccess::runner(engine), p, engine.model_info().vocab_size, 64, false);
}

constexpr std::array<int, 4> kBits = {7, 10, 13, 16};

class Fp8ActYardstick : public ::testing::TestWithParam<std::pair<const char*, Fp8ExportFormat>> {};

TEST_P(Fp8ActYardstick, SmallerRoundingsMoveTheLogitsByAtMostTwoYardsticks) {
  const auto [name, format] = GetParam();
  Engine float_engine(tiny_engine_config(stories_dir()));
  const std::vector<RefPrompt> p = prompts(float_engine.model_info().vocab_size);
  const auto float_logits = logits_of(float_engine, p);
  const std::string dir = make_temp_dir(std::string("fp8_yardstick_") + name);
  export_fp8_checkpoint(stories_dir(), dir, Fp8ExportOptions{format});
  Engine engine(tiny_engine_config(dir));
  auto& cpu = dynamic_cast<CpuBackend&>(EngineBenchAccess::runner(engine).backend());
  const auto ref = logits_of(engine, p);
  std::vector<std::vector<std::vector<float>>> rounded;  // by kBits
  for (int bits : kBits) {
    cpu.set_fp8_act_round_bits(bits);
    rounded.push_back(logits_of(engine, p));
  }
  cpu.set_fp8_act_round_bits(0);
  const auto again = logits_of(engine, p);
  for (size_t i = 0; i < p.size(); ++i) {
    std::vector<double> y;
    for (size_t b = 0; b < kBits.size(); ++b) y.push_back(rel_err(rounded[b][i], ref[i]));
    std::printf("stories260K %s prompt %zu tokens: Y(7 bits = bf16) %.3g, Y(10) %.3g, Y(13) %.3g, Y(16) %.3g; FP8 vs "
                "the float model %.3g\n",
                name, p[i].ids.size(), y[0], y[1], y[2], y[3], rel_err(ref[i], float_logits[i]));
    EXPECT_EQ(std::memcmp(again[i].data(), ref[i].data(), ref[i].size() * 4), 0) << name;
    EXPECT_GT(y[0], 0.0) << name << " prompt of " << p[i].ids.size();
    for (size_t b = 1; b < kBits.size(); ++b)
      EXPECT_LE(y[b], 2 * y[0]) << name << " prompt of " << p[i].ids.size() << ": " << kBits[b] << " bits";
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8ActYardstick,
                         ::testing::Values(std::pair{"ct_channel", Fp8ExportFormat::ct_channel},
                                           std::pair{"ct_tensor_static", Fp8ExportFormat::ct_tensor_static},
                                           std::pair{"fp8_block", Fp8ExportFormat::fp8_block}),
                         [](const auto& info) { return std::string(info.param.first); });

}  // namespace
}  // namespace seam::test
