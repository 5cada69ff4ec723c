// Weight-only FP8 checkpoints (W8A16: compressed-tensors with input_activations null, as
// llm-compressor writes its FP8 weight-only scheme and vLLM loads it; ModelOpt's FP8_PB_WO): the weights are
// dequantized at load (model/fp8_dequant.h) and the model runs them as float linears.
//
// Stated agreement: on the CPU in float32, a weight-only folder's logits are bit-equal to those of
// the same folder with every FP8 weight replaced by float32 values the test computes itself from
// the codes and scales (fp8_moe_folders.h's with_all_float) and no quantization config — for each
// weight scheme (per-channel, per-tensor, 128x128 blocks; ModelOpt's blocks), dense Llama / Mistral / Gemma 3 / Phi-3
// / Phi-4-mini (LongRoPE's rotary-row factor applied to the dequantized values, as to any float
// weight) and the mixture-of-experts models (experts and attention both dequantized). And within
// 0.15 relative of transformers' float32 logits of the unquantized model, the W8A8 formats'
// bound (measured 2026-12-05: 0.048 to 0.066 on six models, 0.113 to 0.133 on tiny Gemma 3,
// whose logits move most under any weight perturbation of this size).
// With --quantization fp8 the stored FP8 weights run as FP8 layers with dynamic activations
// instead: bit-equal to the W8A8 checkpoint with the same codes and scales.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "model/checkpoint.h"
#include "model/fp8_export.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "fp8_moe_folders.h"
#include "golden.h"
#include "hf_reference.h"

namespace seam::test {
namespace {

using nlohmann::json;

std::vector<std::vector<float>> logits_of(const std::string& dir, const std::vector<RefPrompt>& prompts) {
  EngineConfig cfg = tiny_engine_config(dir);
  cfg.disable_cuda_graph = true;
  return engine_prompt_logits(cfg, prompts);
}

json& group0(json& cfg) { return cfg["quantization_config"]["config_groups"]["group_0"]; }

// A copy of the compressed-tensors folder `dir` made weight-only: input_activations null and
// the static input scales (ct-tensor-static) dropped.
std::string as_weight_only(const std::string& dir) {
  const std::string out = fresh_dir("fp8wo");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    std::filesystem::copy_file(e.path(), out + "/" + e.path().filename().string(),
                               std::filesystem::copy_options::overwrite_existing);
  json cfg = json::parse(read_file(out + "/config.json"));
  group0(cfg)["input_activations"] = nullptr;
  write_file(out + "/config.json", cfg.dump(2));
  edit_model_tensors(out, [](std::vector<StTensor>& ts) {
    std::erase_if(ts, [](const StTensor& t) { return t.name.ends_with(".input_scale"); });
  });
  return out;
}

// The three compressed-tensors weight schemes, weight-only, and ModelOpt's FP8_PB_WO (128x128
// blocks), of hf_tiny `model`.
std::vector<std::pair<std::string, std::string>> weight_only_folders(const std::string& model) {
  return {{"channel", export_moe(model, Fp8ExportFormat::ct_w8a16)},
          {"tensor", as_weight_only(export_moe(model, Fp8ExportFormat::ct_tensor_static))},
          {"block", as_weight_only(export_moe(model, Fp8ExportFormat::ct_block))},
          {"modelopt FP8_PB_WO", export_moe(model, Fp8ExportFormat::modelopt_pb_wo)}};
}

TEST(Fp8WeightOnly, ParsesAsWeightOnly) {
  const std::string dir = fresh_dir("fp8wo_parse");
  export_fp8_checkpoint(stories_dir(), dir, Fp8ExportOptions{Fp8ExportFormat::ct_w8a16});
  json cfg = json::parse(read_file(dir + "/config.json"));
  ASSERT_TRUE(group0(cfg).contains("input_activations"));
  EXPECT_TRUE(group0(cfg)["input_activations"].is_null());  // as llm-compressor writes it
  const ModelConfig c = load_model_config(dir);
  EXPECT_EQ(c.quant.method, QuantMethod::compressed_tensors);
  EXPECT_EQ(c.quant.weight, Fp8WeightScheme::per_channel);
  EXPECT_TRUE(c.quant.weight_only);
  EXPECT_TRUE(c.quant.serialized());
  // Absent reads as null.
  group0(cfg).erase("input_activations");
  write_file(dir + "/config.json", cfg.dump(2));
  EXPECT_TRUE(load_model_config(dir).quant.weight_only);
  // An empty object is not "no activation quantization": it is a scheme missing its fields.
  group0(cfg)["input_activations"] = json::object();
  write_file(dir + "/config.json", cfg.dump(2));
  try {
    load_model_config(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input_activations.num_bits must be 8"), std::string::npos) << e.what();
  }
  // ModelOpt's FP8_PB_WO: 128x128 block scales, weight-only.
  const std::string pb = fresh_dir("fp8wo_pb");
  export_fp8_checkpoint(stories_dir(), pb, Fp8ExportOptions{Fp8ExportFormat::modelopt_pb_wo});
  const ModelConfig pc = load_model_config(pb);
  EXPECT_EQ(pc.quant.method, QuantMethod::modelopt);
  EXPECT_EQ(pc.quant.weight, Fp8WeightScheme::block128);
  EXPECT_EQ(pc.quant.weight_scale_name, "weight_scale");
  EXPECT_TRUE(pc.quant.weight_only);
  // A W8A8 scheme is not weight-only.
  const std::string w8a8 = fresh_dir("fp8wo_w8a8");
  export_fp8_checkpoint(stories_dir(), w8a8, Fp8ExportOptions{Fp8ExportFormat::ct_channel});
  EXPECT_FALSE(load_model_config(w8a8).quant.weight_only);
}

class Fp8WeightOnlyModels : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp8WeightOnlyModels, EqualsTheDequantizedFloatModel) {
  const std::string model = GetParam();
  const std::vector<RefPrompt> prompts = load_hf_reference(hf_tiny(model));
  for (const auto& [scheme, dir] : weight_only_folders(model)) {
    SCOPED_TRACE(model + " " + scheme);
    const ModelConfig c = load_model_config(dir);
    ASSERT_TRUE(c.quant.weight_only);
    {
      // Every decoder linear is F8_E4M3 in the folder and loads dense (not an FP8 layer), in the
      // model's dtype.
      auto ck = Checkpoint::open(dir, c);
      EXPECT_EQ(ck->layers[0].q_proj.dtype, DType::fp8_e4m3);
      EXPECT_GT(ck->fp8_scales.size(), 0u);
      CpuBackend be;
      LlamaModel m(be, c, *ck, DType::f32);
      EXPECT_FALSE(m.layer_qkv(0).is_fp8());
      EXPECT_EQ(m.layer_qkv(0).weight().dtype, DType::f32);
    }
    const auto got = logits_of(dir, prompts);
    const auto want = logits_of(with_all_float(dir), prompts);
    ASSERT_EQ(got.size(), prompts.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].size(), want[i].size());
      for (size_t v = 0; v < got[i].size(); ++v) ASSERT_EQ(got[i][v], want[i][v]) << "prompt " << i << " logit " << v;
    }
    // A sensible approximation of the float model (catches scales read inverted, which the
    // equality above shares with the test's own dequantization: that gives errors far past 1).
    // E4M3's 3 mantissa bits on the weights alone; the measured values are in the header.
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = rel_err(got[i], prompts[i].logits_fp32);
      worst = std::max(worst, e);
      EXPECT_LT(e, 0.15) << "prompt of " << prompts[i].ids.size() << " tokens";
    }
    std::printf("%s %s: max rel err vs transformers float32 %.4f\n", model.c_str(), scheme.c_str(), worst);
  }
}

INSTANTIATE_TEST_SUITE_P(HfTiny, Fp8WeightOnlyModels,
                         ::testing::Values("tiny-mistral", "tiny-gemma3", "tiny-phi3", "tiny-phi4", "tiny-qwen3-moe",
                                           "tiny-qwen2-moe", "tiny-mixtral"),
                         [](const auto& info) { return hf_tiny_param_name(info.param); });

// --quantization fp8 on a weight-only folder runs its stored FP8 weights as FP8 layers with dynamic
// activations: per token for channel weights, 1x128 groups for 128x128 blocks. Then it is the W8A8
// checkpoint with the same codes and scales, bit for bit: each weight-only folder here is a W8A8
// export with its activation scheme removed (as_weight_only), compared with that export as it is.
TEST(Fp8WeightOnly, QuantizationFlagRunsTheStoredWeightsAsFp8) {
  struct Case {
    std::string model;
    Fp8ExportFormat format;
    Fp8ActScheme act;
  };
  // A dense model in both schemes, and a mixture-of-experts one (its FP8 experts dequantized at
  // load either way, its attention FP8 layers).
  const Case cases[] = {{"tiny-mistral", Fp8ExportFormat::ct_channel, Fp8ActScheme::dynamic_per_token},
                        {"tiny-mistral", Fp8ExportFormat::ct_block, Fp8ActScheme::dynamic_group128},
                        {"tiny-qwen3-moe", Fp8ExportFormat::ct_channel, Fp8ActScheme::dynamic_per_token}};
  for (const auto& [model, format, act] : cases) {
    const std::vector<RefPrompt> prompts = load_hf_reference(hf_tiny(model));
    const std::string w8a8 = export_moe(model, format), wo = as_weight_only(w8a8);
    SCOPED_TRACE(wo);
    ModelConfig c = load_model_config(wo);
    ASSERT_TRUE(c.quant.weight_only);
    apply_quantization_flag(c.quant, "fp8");
    EXPECT_FALSE(c.quant.weight_only);
    EXPECT_EQ(c.quant.act, act);
    EXPECT_EQ(c.quant.method, load_model_config(w8a8).quant.method);
    {
      auto ck = Checkpoint::open(wo, c);
      CpuBackend be;
      LlamaModel m(be, c, *ck, DType::f32);
      EXPECT_TRUE(m.layer_qkv(0).is_fp8());  // an FP8 layer now, not dequantized
    }
    EngineConfig cfg = tiny_engine_config(wo);
    cfg.disable_cuda_graph = true;
    cfg.quantization = "fp8";
    const auto got = engine_prompt_logits(cfg, prompts);
    const auto want = logits_of(w8a8, prompts);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "prompt " << i;
    // And not the weight-only run (the activations are quantized now).
    EXPECT_NE(got, logits_of(wo, prompts));
  }
  // ModelOpt's FP8_PB_WO (128x128 blocks, weight-only) with the flag is the fp8 block format
  // (Qwen3-FP8 style: the same blocks, dynamic 1x128 activation groups) of the same model.
  const std::vector<RefPrompt> prompts = load_hf_reference(hf_tiny("tiny-mistral"));
  const std::string pb = export_moe("tiny-mistral", Fp8ExportFormat::modelopt_pb_wo);
  EngineConfig cfg = tiny_engine_config(pb);
  cfg.disable_cuda_graph = true;
  cfg.quantization = "fp8";
  const auto got = engine_prompt_logits(cfg, prompts);
  const auto want = logits_of(export_moe("tiny-mistral", Fp8ExportFormat::fp8_block), prompts);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "FP8_PB_WO, prompt " << i;
}

// A weight-only folder that still stores an activation scale is inconsistent: refused by name.
TEST(Fp8WeightOnly, AnActivationScaleIsRefused) {
  const std::string ts = export_moe("tiny-mistral", Fp8ExportFormat::ct_tensor_static);
  json cfg = json::parse(read_file(ts + "/config.json"));
  group0(cfg)["input_activations"] = nullptr;
  write_file(ts + "/config.json", cfg.dump(2));
  const std::string err = checkpoint_open_error(ts);
  EXPECT_NE(err.find("input_scale' is an activation scale"), std::string::npos) << err;
  EXPECT_NE(err.find("weight-only FP8"), std::string::npos) << err;
}

}  // namespace
}  // namespace seam::test
