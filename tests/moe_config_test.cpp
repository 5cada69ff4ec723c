// The mixture-of-experts configs and checkpoints: the tiny transformers checkpoints read
// field by field, the sparse/dense layer rule, the expert layout MoeLayer uploads, and every
// error (a field seam does not honour, a missing or extra expert tensor) as a one-line
// message naming the field or tensor.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/model_config.h"
#include "model/moe_layer.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::json;

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

json tiny_moe_config(const std::string& arch, MoeStyle style) {
  json cfg = test::tiny_config_json(arch);
  test::add_tiny_moe_fields(cfg, style);
  return cfg;
}

std::string folder_with(const json& cfg) {
  const std::string dir = test::make_temp_dir("moe");
  test::write_config(dir, cfg);
  return dir;
}

template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one-line message: " << msg;
  }
}

void expect_config_error(const json& cfg, std::initializer_list<std::string> parts) {
  const std::string dir = folder_with(cfg);
  expect_error([&] { load_model_config(dir); }, parts);
}

TEST(MoeConfig, TinyQwen3Moe) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-qwen3-moe"));
  EXPECT_EQ(c.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c.moe.style, MoeStyle::qwen3);
  EXPECT_EQ(c.moe.n_experts, 8) << "transformers 5 writes num_local_experts";
  EXPECT_EQ(c.moe.n_experts_per_tok, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 32);
  EXPECT_TRUE(c.moe.norm_topk_prob && c.moe.renormalize());
  EXPECT_EQ(c.moe.mlp_only_layers, std::vector<int>{1});
  EXPECT_FALSE(c.moe.has_shared_expert());
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.moe.is_sparse_layer(i), i != 1) << "layer " << i;
  EXPECT_EQ(mlp_buffer_width(c), 128) << "layer 1's dense MLP";
}

TEST(MoeConfig, TinyQwen2Moe) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-qwen2-moe"));
  EXPECT_EQ(c.moe.style, MoeStyle::qwen2);
  EXPECT_EQ(c.moe.n_experts, 8);
  EXPECT_EQ(c.moe.expert_intermediate_size, 32);
  EXPECT_FALSE(c.moe.norm_topk_prob || c.moe.renormalize());
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 64);
  EXPECT_TRUE(c.attention_bias) << "qkv_bias";
  EXPECT_FALSE(c.o_proj_bias);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c.moe.is_sparse_layer(i));
  EXPECT_EQ(mlp_buffer_width(c), 64) << "the shared expert; no dense layer";
}

TEST(MoeConfig, TinyMixtral) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-mixtral"));
  EXPECT_EQ(c.moe.style, MoeStyle::mixtral);
  EXPECT_EQ(c.moe.n_experts, 4);
  EXPECT_EQ(c.moe.n_experts_per_tok, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 128) << "Mixtral's experts are intermediate_size wide";
  EXPECT_TRUE(c.moe.renormalize()) << "Mixtral always renormalises the chosen weights";
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c.moe.is_sparse_layer(i));
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_TRUE(c.layer_windows.empty()) << "sliding_window null: full attention";
}

TEST(MoeConfig, DenseModelsHaveNoExperts) {
  const ModelConfig c = load_model_config(test::stories_dir());
  EXPECT_FALSE(c.moe.enabled());
  EXPECT_EQ(c.moe.style, MoeStyle::none);
  EXPECT_FALSE(c.moe.is_sparse_layer(0));
  EXPECT_EQ(mlp_buffer_width(c), c.intermediate_size);
}

TEST(MoeConfig, DecoderSparseStepAndMlpOnlyLayers) {
  json cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["num_hidden_layers"] = 6;
  cfg["decoder_sparse_step"] = 2;
  cfg["mlp_only_layers"] = {3, 3};
  const ModelConfig c = load_model_config(folder_with(cfg));
  // (i + 1) % 2 == 0 -> 1, 3, 5; 3 is listed dense.
  std::vector<bool> sparse;
  for (int i = 0; i < 6; ++i) sparse.push_back(c.moe.is_sparse_layer(i));
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
}

TEST(MoeConfig, Qwen2MoeQkvBiasIsHonoured) {
  json cfg = tiny_moe_config("Qwen2MoeForCausalLM", MoeStyle::qwen2);
  EXPECT_TRUE(load_model_config(folder_with(cfg)).attention_bias) << "qkv_bias defaults to true";
  cfg["qkv_bias"] = false;
  const ModelConfig c = load_model_config(folder_with(cfg));
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
}

TEST(MoeConfig, TrainingOnlyFieldsAreIgnored) {
  json cfg = tiny_moe_config("MixtralForCausalLM", MoeStyle::mixtral);
  cfg["router_jitter_noise"] = 0.1;
  cfg["output_router_logits"] = true;
  cfg["router_aux_loss_coef"] = 0.02;
  EXPECT_NO_THROW(load_model_config(folder_with(cfg)));
}

TEST(MoeConfig, MixtralSlidingWindowIsAttendedWithinOnEveryLayerAsMistral) {
  json cfg = tiny_moe_config("MixtralForCausalLM", MoeStyle::mixtral);
  cfg["sliding_window"] = 32;
  const ModelConfig c = load_model_config(folder_with(cfg));
  EXPECT_EQ(c.max_position_embeddings, cfg["max_position_embeddings"].get<int>()) << "a window, not a cap";
  EXPECT_EQ(c.sliding_window, 32);
  EXPECT_EQ(c.layer_windows, std::vector<int>(size_t(c.n_layers), 32));
  cfg["sliding_window"] = nullptr;
  const ModelConfig none = load_model_config(folder_with(cfg));
  EXPECT_TRUE(none.layer_windows.empty());
  EXPECT_EQ(none.window(0), 0);
}

TEST(MoeConfig, QwenMoeSlidingWindowIsOptInAsQwen) {
  for (const auto& [arch, style] : {std::pair{"Qwen2MoeForCausalLM", MoeStyle::qwen2},
                                    std::pair{"Qwen3MoeForCausalLM", MoeStyle::qwen3}}) {
    SCOPED_TRACE(arch);
    json cfg = tiny_moe_config(arch, style);
    cfg["sliding_window"] = 16;
    cfg["max_window_layers"] = 1;
    EXPECT_TRUE(load_model_config(folder_with(cfg)).layer_windows.empty()) << "no use_sliding_window";
    cfg["use_sliding_window"] = true;
    EXPECT_EQ(load_model_config(folder_with(cfg)).layer_windows, (std::vector<int>{0, 16}));
  }
}

TEST(MoeConfigErrors, MissingAndBadFields) {
  json cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg.erase("num_local_experts");
  expect_config_error(cfg, {"config.json: missing field 'num_experts' (or 'num_local_experts')"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["num_experts"] = 6;
  expect_config_error(cfg, {"'num_experts' (6) and 'num_local_experts' (4) disagree"});

  cfg = tiny_moe_config("MixtralForCausalLM", MoeStyle::mixtral);
  cfg["num_experts_per_tok"] = 5;
  expect_config_error(cfg, {"'num_experts_per_tok' (5) is more than the 4 experts"});

  cfg = tiny_moe_config("MixtralForCausalLM", MoeStyle::mixtral);
  cfg.erase("num_experts_per_tok");
  expect_config_error(cfg, {"missing field 'num_experts_per_tok'"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg.erase("moe_intermediate_size");
  expect_config_error(cfg, {"missing field 'moe_intermediate_size'"});

  cfg = tiny_moe_config("Qwen2MoeForCausalLM", MoeStyle::qwen2);
  cfg.erase("shared_expert_intermediate_size");
  expect_config_error(cfg, {"missing field 'shared_expert_intermediate_size'"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["decoder_sparse_step"] = 0;
  expect_config_error(cfg, {"field 'decoder_sparse_step' must be positive"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["mlp_only_layers"] = {0, 2};
  expect_config_error(cfg, {"'mlp_only_layers' lists layer 2, which is not in [0, num_hidden_layers = 2)"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["mlp_only_layers"] = "1";
  expect_config_error(cfg, {"field 'mlp_only_layers' must be a list of layer indices"});

  cfg = tiny_moe_config("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  cfg["norm_topk_prob"] = "yes";
  expect_config_error(cfg, {"field 'norm_topk_prob' must be true or false"});

  cfg = tiny_moe_config("Qwen2MoeForCausalLM", MoeStyle::qwen2);
  cfg["layer_types"] = {"full_attention", "sliding_attention"};
  expect_config_error(cfg, {"'layer_types' has 'sliding_attention' without use_sliding_window"});

  cfg = tiny_moe_config("Qwen2MoeForCausalLM", MoeStyle::qwen2);
  cfg["layer_types"] = {"full_attention"};
  expect_config_error(cfg, {"field 'layer_types' must list one attention type per layer (2)"});

  cfg = tiny_moe_config("MixtralForCausalLM", MoeStyle::mixtral);
  cfg["hidden_act"] = "gelu";
  expect_config_error(cfg, {"field 'hidden_act' is 'gelu'"});
}

// ---- checkpoints ----

struct MoeFolder {
  std::string dir;
  ModelConfig config;
  std::vector<test::StTensor> tensors;
};

MoeFolder moe_folder(const std::string& arch, MoeStyle style) {
  MoeFolder f;
  f.dir = folder_with(tiny_moe_config(arch, style));
  f.config = load_model_config(f.dir);
  f.tensors = test::model_tensors(f.config, "F32");
  return f;
}

void write(const MoeFolder& f) { test::write_safetensors(f.dir + "/model.safetensors", f.tensors); }

void erase(MoeFolder& f, const std::string& name) {
  const int i = test::seed_of(f.tensors, name);
  ASSERT_GE(i, 0) << name;
  f.tensors.erase(f.tensors.begin() + i);
}

TEST(MoeCheckpoint, TinyCheckpointsGroupTheExpertsByLayer) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-qwen3-moe"));
  auto ck = Checkpoint::open(tiny_dir("tiny-qwen3-moe"), c);
  ASSERT_EQ(ck->layers.size(), 4u);
  EXPECT_FALSE(ck->layers[1].moe.defined());
  EXPECT_TRUE(ck->layers[1].gate_proj.defined()) << "mlp_only_layers: dense";
  const MoeTensors& m = ck->layers[0].moe;
  ASSERT_TRUE(m.defined());
  EXPECT_FALSE(ck->layers[0].gate_proj.defined());
  EXPECT_EQ(m.router.name, "model.layers.0.mlp.gate.weight");
  ASSERT_EQ(m.gate.size(), 8u);
  EXPECT_EQ(m.gate[5].name, "model.layers.0.mlp.experts.5.gate_proj.weight");
  EXPECT_EQ(m.down[7].shape, (std::vector<int64_t>{64, 32}));
  EXPECT_FALSE(m.shared_gate_proj.defined());

  const ModelConfig cm = load_model_config(tiny_dir("tiny-mixtral"));
  auto ckm = Checkpoint::open(tiny_dir("tiny-mixtral"), cm);
  const MoeTensors& mm = ckm->layers[3].moe;
  EXPECT_EQ(mm.gate[2].name, "model.layers.3.block_sparse_moe.experts.2.w1.weight");
  EXPECT_EQ(mm.up[2].name, "model.layers.3.block_sparse_moe.experts.2.w3.weight");
  EXPECT_EQ(mm.down[2].name, "model.layers.3.block_sparse_moe.experts.2.w2.weight");

  const ModelConfig c2 = load_model_config(tiny_dir("tiny-qwen2-moe"));
  auto ck2 = Checkpoint::open(tiny_dir("tiny-qwen2-moe"), c2);
  EXPECT_EQ(ck2->layers[2].moe.shared_expert_gate.shape, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(ck2->layers[2].moe.shared_down_proj.shape, (std::vector<int64_t>{64, 64}));
}

// MoeLayer lays the experts out for the kernels: w_gate_up[e] = [gate_e; up_e], w_down[e] = down_e.
TEST(MoeCheckpoint, ExpertsAreFusedPerExpertAtLoad) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-mixtral"));
  auto ck = Checkpoint::open(tiny_dir("tiny-mixtral"), c);
  CpuBackend be;
  const MoeTensors& t = ck->layers[1].moe;
  MoeLayer layer(be, c, t, WeightFormat::f32, *ck);
  const int64_t E = 4, I = 128, H = 64;
  EXPECT_EQ(layer.w_gate_up().shape_str(), "[4, 256, 64]");
  EXPECT_EQ(layer.w_down().shape_str(), "[4, 64, 128]");
  for (int64_t e = 0; e < E; ++e) {
    const float* gu = layer.w_gate_up().ptr<float>() + e * 2 * I * H;
    EXPECT_EQ(std::memcmp(gu, t.gate[size_t(e)].data, size_t(I * H) * 4), 0) << "gate of expert " << e;
    EXPECT_EQ(std::memcmp(gu + I * H, t.up[size_t(e)].data, size_t(I * H) * 4), 0) << "up of expert " << e;
    EXPECT_EQ(std::memcmp(layer.w_down().ptr<float>() + e * H * I, t.down[size_t(e)].data, size_t(H * I) * 4), 0)
        << "down of expert " << e;
  }
  EXPECT_EQ(layer.bytes(), size_t(E * H + E * 3 * I * H) * 4) << "router and experts";
}

TEST(MoeCheckpointErrors, MissingExtraAndMisShapedExpertTensors) {
  MoeFolder f = moe_folder("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  erase(f, "model.layers.0.mlp.experts.3.up_proj.weight");
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); },
               {"model.safetensors: missing tensor 'model.layers.0.mlp.experts.3.up_proj.weight'"});

  f = moe_folder("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  f.tensors.push_back(test::make_tensor("model.layers.0.mlp.experts.4.up_proj.weight", "F32", {8, 16}, 0));
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); },
               {"unexpected tensor 'model.layers.0.mlp.experts.4.up_proj.weight'"});

  f = moe_folder("Qwen3MoeForCausalLM", MoeStyle::qwen3);
  erase(f, "model.layers.0.mlp.gate.weight");
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); },
               {"missing tensor 'model.layers.0.mlp.gate.weight' (the router of a mixture-of-experts layer)"});

  f = moe_folder("MixtralForCausalLM", MoeStyle::mixtral);
  *std::find_if(f.tensors.begin(), f.tensors.end(), [](const test::StTensor& t) {
    return t.name == "model.layers.1.block_sparse_moe.experts.0.w2.weight";
  }) = test::make_tensor("model.layers.1.block_sparse_moe.experts.0.w2.weight", "F32", {24, 16}, 0);
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); },
               {"tensor 'model.layers.1.block_sparse_moe.experts.0.w2.weight' has shape [24, 16], expected [16, 24]"});

  // Qwen2-MoE's shared expert gate (layer 1 is dense in the tiny config: layer 0).
  f = moe_folder("Qwen2MoeForCausalLM", MoeStyle::qwen2);
  erase(f, "model.layers.0.mlp.shared_expert_gate.weight");
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); },
               {"missing tensor 'model.layers.0.mlp.shared_expert_gate.weight' (the config has "
                "shared_expert_intermediate_size)"});
}

TEST(MoeCheckpointErrors, DenseTensorsInASparseLayerAreUnexpected) {
  MoeFolder f = moe_folder("MixtralForCausalLM", MoeStyle::mixtral);
  f.tensors.push_back(test::make_tensor("model.layers.0.mlp.gate_proj.weight", "F32", {24, 16}, 0));
  write(f);
  expect_error([&] { Checkpoint::open(f.dir, f.config); }, {"unexpected tensor 'model.layers.0.mlp.gate_proj.weight'"});
}

}  // namespace
}  // namespace seam
