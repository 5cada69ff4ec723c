// FP8 checkpoints: each format seam loads (made from stories260K by model/fp8_export, the
// `seam quantize-fp8` tool) parses to the right schemes and loads its scales; every variant
// seam does not support and every broken checkpoint is a clear error naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "backend/cpu/cpu_backend.h"
#include "model/checkpoint.h"
#include "model/fp8_export.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "safetensors_writer.h"

namespace seam::test {
namespace {

using nlohmann::json;

// The folders this binary made, removed when it ends (each is a 400 KB copy of the model).
std::vector<std::string>& made_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
struct RemoveMadeDirs : ::testing::Environment {
  void TearDown() override {
    for (const auto& d : made_dirs()) std::filesystem::remove_all(d);
  }
};
[[maybe_unused]] auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new RemoveMadeDirs);

std::string export_format(Fp8ExportFormat f) {
  const std::string dir = make_temp_dir("fp8ck");
  made_dirs().push_back(dir);
  export_fp8_checkpoint(stories_dir(), dir, Fp8ExportOptions{f});
  return dir;
}

// Loads config, checkpoint and model (the model runs the fused-parts checks).
void load(const std::string& dir, const std::string& quantization = "") {
  ModelConfig c = load_model_config(dir);
  apply_quantization_flag(c.quant, quantization);
  auto ck = Checkpoint::open(dir, c);
  CpuBackend be;
  LlamaModel m(be, c, *ck, DType::f32);
}

void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    FAIL() << "no error, expected: " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "got: " << e.what() << "\nwant: " << what;
  }
}

void edit_config(const std::string& dir, const std::function<void(json&)>& edit, const std::string& file = "config.json") {
  json j = json::parse(read_file(dir + "/" + file));
  edit(j);
  write_file(dir + "/" + file, j.dump(2));
}

StTensor* find(std::vector<StTensor>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return &t;
  ADD_FAILURE() << "no tensor " << name;
  return &ts[0];
}

std::string f32s(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

const std::string kL0 = "model.layers.0.";

TEST(Fp8Checkpoint, EachFormatParsesAndLoads) {
  struct Want {
    Fp8ExportFormat f;
    QuantMethod m;
    Fp8WeightScheme w;
    Fp8ActScheme a;
    const char* scale;
    size_t n_kv_scales;
  };
  using W = Fp8WeightScheme;
  using A = Fp8ActScheme;
  for (const Want& want : std::vector<Want>{
           {Fp8ExportFormat::ct_channel, QuantMethod::compressed_tensors, W::per_channel, A::dynamic_per_token, "weight_scale", 0},
           {Fp8ExportFormat::ct_tensor_static, QuantMethod::compressed_tensors, W::per_tensor, A::static_per_tensor, "weight_scale", 0},
           {Fp8ExportFormat::ct_block, QuantMethod::compressed_tensors, W::block128, A::dynamic_group128, "weight_scale", 0},
           {Fp8ExportFormat::fp8_block, QuantMethod::fp8, W::block128, A::dynamic_group128, "weight_scale_inv", 0},
           {Fp8ExportFormat::fp8_tensor, QuantMethod::fp8, W::per_tensor, A::dynamic_per_token, "weight_scale", 0},
           {Fp8ExportFormat::fbgemm, QuantMethod::fbgemm_fp8, W::per_channel, A::dynamic_per_token, "weight_scale", 0},
           {Fp8ExportFormat::modelopt, QuantMethod::modelopt, W::per_tensor, A::static_per_tensor, "weight_scale", 10},
           {Fp8ExportFormat::modelopt_channel, QuantMethod::modelopt, W::per_channel, A::dynamic_per_token, "weight_scale", 0}}) {
    const std::string dir = export_format(want.f);
    const ModelConfig c = load_model_config(dir);
    SCOPED_TRACE(quant_method_name(c.quant.method));
    EXPECT_EQ(c.quant.method, want.m);
    EXPECT_EQ(c.quant.weight, want.w);
    EXPECT_EQ(c.quant.act, want.a);
    EXPECT_EQ(c.quant.weight_scale_name, want.scale);
    EXPECT_EQ(c.quant.act_amax_ub, want.f == Fp8ExportFormat::fbgemm ? 1200.f : 0.f);
    auto ck = Checkpoint::open(dir, c);
    EXPECT_EQ(ck->fp8_scales.size(), size_t(7 * c.n_layers));  // every decoder linear; the tied head is float
    EXPECT_EQ(ck->kv_scales.size(), want.n_kv_scales);
    EXPECT_EQ(ck->layers[0].q_proj.dtype, DType::fp8_e4m3);
    EXPECT_EQ(ck->embed_tokens.dtype, DType::f32);
    EXPECT_EQ(ck->fp8_scales.at(kL0 + "mlp.down_proj.weight").input_scale.defined(), want.a == A::static_per_tensor);
    CpuBackend be;
    LlamaModel m(be, c, *ck, DType::f32);
    // FP8 weights are a quarter of float32 ones (plus scales): the model is smaller.
    EXPECT_LT(m.weight_bytes(), size_t(1000000));
  }
}

TEST(Fp8Checkpoint, IgnorePatterns) {
  QuantConfig q;
  q.ignore = {"lm_head", "re:.*mlp\\.down_proj", "*layers.3.self_attn*"};
  EXPECT_TRUE(q.ignores("lm_head"));
  EXPECT_TRUE(q.ignores("model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(q.ignores("model.layers.0.mlp.up_proj"));
  EXPECT_TRUE(q.ignores("model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(q.ignores("model.layers.2.self_attn.q_proj"));
}

TEST(Fp8Checkpoint, OnlineQuantizationFlag) {
  ModelConfig c = load_model_config(stories_dir());
  apply_quantization_flag(c.quant, "fp8");
  EXPECT_EQ(c.quant.method, QuantMethod::online_fp8);
  EXPECT_EQ(c.quant.weight, Fp8WeightScheme::per_channel);
  EXPECT_EQ(c.quant.act, Fp8ActScheme::dynamic_per_token);
  load(stories_dir(), "fp8");
  ModelConfig d = load_model_config(stories_dir());
  apply_quantization_flag(d.quant, "none");
  EXPECT_FALSE(d.quant.quantized());
  expect_error([&] { apply_quantization_flag(d.quant, "int8"); }, "--quantization: 'int8' is not one of fp8, none");
  const std::string ct = export_format(Fp8ExportFormat::ct_channel);
  expect_error([&] { load(ct, "fp8"); }, "--quantization fp8: the checkpoint is already quantized (compressed-tensors");
  load(export_format(Fp8ExportFormat::fp8_block), "fp8");  // quant_method fp8 with the flag: as it is
}

struct ConfigCase {
  Fp8ExportFormat f;
  std::function<void(json&)> edit;
  std::string error;
};

TEST(Fp8Checkpoint, UnsupportedConfigVariants) {
  auto w = [](json& j) -> json& { return j["quantization_config"]["config_groups"]["group_0"]["weights"]; };
  auto a = [](json& j) -> json& { return j["quantization_config"]["config_groups"]["group_0"]["input_activations"]; };
  const std::string g = "config.json: quantization_config.config_groups.group_0.";
  std::vector<ConfigCase> cases = {
      {Fp8ExportFormat::ct_channel, [](json& j) { j["quantization_config"]["quant_method"] = "awq"; },
       "quantization_config.quant_method is 'awq' (supported: compressed-tensors, fp8, fbgemm_fp8, modelopt)"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { w(j)["num_bits"] = 4; }, g + "weights.num_bits must be 8"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { w(j)["type"] = "int"; }, g + "weights.type is 'int'"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { w(j)["strategy"] = "group"; },
       g + "weights.strategy is 'group' (supported: tensor, channel, block)"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { w(j)["symmetric"] = false; }, "symmetric FP8 only"},
      // null is weight-only FP8 (tests/fp8_weight_only_test.cpp); an empty scheme is an error.
      {Fp8ExportFormat::ct_channel, [&](json& j) { a(j) = json::object(); }, g + "input_activations.num_bits must be 8"},
      {Fp8ExportFormat::ct_w8a16, [&](json& j) { w(j)["strategy"] = "group"; },
       g + "weights.strategy is 'group' (supported: tensor, channel, block)"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { a(j)["dynamic"] = false; },
       "per-token activation scales are dynamic only"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { a(j)["strategy"] = "tensor"; },
       "dynamic per-tensor activation scales are not supported"},
      {Fp8ExportFormat::ct_channel, [&](json& j) { a(j)["strategy"] = "channel"; },
       g + "input_activations.strategy is 'channel' (supported: token, tensor)"},
      {Fp8ExportFormat::ct_channel,
       [](json& j) { j["quantization_config"]["config_groups"]["group_1"] = j["quantization_config"]["config_groups"]["group_0"]; },
       "has 2 groups: seam supports one quantization scheme"},
      {Fp8ExportFormat::ct_channel,
       [&](json& j) { j["quantization_config"]["config_groups"]["group_0"]["output_activations"] = a(j); },
       g + "output_activations is set: output quantization is not supported"},
      {Fp8ExportFormat::ct_channel,
       [](json& j) { j["quantization_config"]["sparsity_config"] = {{"format", "sparse-24-bitmask"}}; },
       "quantization_config.sparsity_config is set: sparse compressed-tensors checkpoints are not supported"},
      {Fp8ExportFormat::ct_channel,
       [](json& j) {
         j["quantization_config"]["kv_cache_scheme"] = {
             {"num_bits", 8}, {"type", "float"}, {"strategy", "attn_head"}, {"dynamic", false}, {"symmetric", true}};
       },
       "quantization_config.kv_cache_scheme.strategy is 'attn_head': seam reads static per-tensor KV cache scales only"},
      {Fp8ExportFormat::ct_channel,
       [](json& j) { j["quantization_config"]["kv_cache_scheme"] = {{"num_bits", 8}, {"type", "int"}}; },
       "quantization_config.kv_cache_scheme.type is 'int'"},
      {Fp8ExportFormat::ct_channel, [](json& j) { j["quantization_config"]["ignore"] = {"re:[unclosed"}; },
       "ignore pattern 're:[unclosed' is not a valid regex"},
      {Fp8ExportFormat::ct_block, [&](json& j) { w(j)["block_structure"] = {64, 64}; },
       "block_structure is [64,64]: seam supports 128x128 weight blocks only"},
      {Fp8ExportFormat::ct_block, [&](json& j) { a(j)["strategy"] = "token"; },
       "block weights need dynamic activations in groups of 128"},
      {Fp8ExportFormat::fp8_block, [](json& j) { j["quantization_config"]["weight_block_size"] = {128, 64}; },
       "quantization_config.weight_block_size is [128,64]: seam supports 128x128 weight blocks only"},
      {Fp8ExportFormat::fp8_block, [](json& j) { j["quantization_config"]["activation_scheme"] = "static"; },
       "block-quantized weights need dynamic activation groups"},
      {Fp8ExportFormat::fp8_block, [](json& j) { j["quantization_config"]["fmt"] = "e5m2"; },
       "quantization_config.fmt is 'e5m2': seam supports e4m3 only"},
      {Fp8ExportFormat::fp8_tensor, [](json& j) { j["quantization_config"]["activation_scheme"] = "minmax"; },
       "activation_scheme is 'minmax' (supported: dynamic, static)"},
      {Fp8ExportFormat::fbgemm, [](json& j) { j["quantization_config"]["activation_scale_ub"] = -1; },
       "activation_scale_ub must be a positive number"},
      {Fp8ExportFormat::ct_channel,
       [](json& j) { j["quantization_config"] = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}}; },
       "quantization_config.quant_algo is 'NVFP4' (supported: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO)"},
  };
  for (const auto& c : cases) {
    const std::string dir = export_format(c.f);
    edit_config(dir, c.edit);
    expect_error([&] { load_model_config(dir); }, c.error);
  }
  // hf_quant_config.json (ModelOpt's own file)
  const std::string mo = export_format(Fp8ExportFormat::modelopt);
  edit_config(mo, [](json& j) { j["quantization"]["quant_algo"] = "INT8_SQ"; }, "hf_quant_config.json");
  expect_error([&] { load_model_config(mo); }, "hf_quant_config.json: quantization.quant_algo is 'INT8_SQ' (supported: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO)");
  edit_config(mo, [](json& j) { j.erase("quantization"); }, "hf_quant_config.json");
  expect_error([&] { load_model_config(mo); }, "hf_quant_config.json: quantization is missing");
}

// The keys llm-compressor writes beside the scheme (as in RedHatAI's FP8-dynamic checkpoints):
// nulls, an empty sparsity_config, a static per-tensor kv_cache_scheme, observer fields. They load.
TEST(Fp8Checkpoint, CompressedTensorsBookkeepingKeysLoad) {
  const std::string dir = export_format(Fp8ExportFormat::ct_channel);
  edit_config(dir, [](json& j) {
    json& qc = j["quantization_config"];
    qc["global_compression_ratio"] = 1.24;
    qc["quantization_status"] = "compressed";
    qc["sparsity_config"] = {{"format", "dense"}, {"global_sparsity", 0.0}};  // the identity format
    qc["kv_cache_scheme"] = {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false},
                             {"symmetric", true}, {"group_size", nullptr}, {"observer", "minmax"}};
    json& g = qc["config_groups"]["group_0"];
    g["output_activations"] = nullptr;
    for (const char* k : {"weights", "input_activations"}) {
      g[k]["actorder"] = nullptr;
      g[k]["block_structure"] = nullptr;
      g[k]["group_size"] = nullptr;
      g[k]["observer"] = "minmax";
      g[k]["observer_kwargs"] = json::object();
    }
  });
  const ModelConfig c = load_model_config(dir);
  EXPECT_EQ(c.quant.weight, Fp8WeightScheme::per_channel);
  EXPECT_EQ(c.quant.act, Fp8ActScheme::dynamic_per_token);
  load(dir);
}

struct TensorCase {
  Fp8ExportFormat f;
  std::function<void(std::vector<StTensor>&)> edit;
  std::string error;
};

TEST(Fp8Checkpoint, BrokenCheckpoints) {
  const std::string q = kL0 + "self_attn.q_proj.";
  auto erase = [](std::vector<StTensor>& ts, const std::string& name) {
    std::erase_if(ts, [&](const StTensor& t) { return t.name == name; });
  };
  std::vector<TensorCase> cases = {
      {Fp8ExportFormat::ct_channel, [&](auto& ts) { erase(ts, q + "weight_scale"); },
       "missing tensor '" + q + "weight_scale': the compressed-tensors (config.json) weight '" + q +
           "weight' needs its per-channel scale"},
      {Fp8ExportFormat::fp8_block, [&](auto& ts) { erase(ts, q + "weight_scale_inv"); },
       "missing tensor '" + q + "weight_scale_inv'"},
      {Fp8ExportFormat::ct_channel, [&](auto& ts) { find(ts, q + "weight_scale")->shape = {32, 2}; },
       "tensor '" + q + "weight_scale' has shape [32, 2], expected [64, 1] or [64]"},
      {Fp8ExportFormat::ct_block, [&](auto& ts) { find(ts, q + "weight_scale")->shape = {1}; },
       "tensor '" + q + "weight_scale' has shape [1], expected [1, 1]"},
      {Fp8ExportFormat::ct_tensor_static, [&](auto& ts) { find(ts, q + "weight_scale")->bytes = f32s({0.f}); },
       "tensor '" + q + "weight_scale' holds 0 at element 0: FP8 scales must be finite and positive"},
      {Fp8ExportFormat::ct_tensor_static, [&](auto& ts) { find(ts, q + "input_scale")->bytes = f32s({NAN}); },
       "tensor '" + q + "input_scale' holds nan"},
      {Fp8ExportFormat::ct_tensor_static, [&](auto& ts) { erase(ts, q + "input_scale"); },
       "missing tensor '" + q + "input_scale': compressed-tensors (config.json) quantizes activations with a static"},
      {Fp8ExportFormat::ct_tensor_static,
       [&](auto& ts) {
         StTensor* s = find(ts, q + "input_scale");
         s->shape = {2};
         s->bytes = f32s({1.f, 1.f});
       },
       "tensor '" + q + "input_scale' has shape [2], expected [] or [1]"},
      {Fp8ExportFormat::ct_channel, [&](auto& ts) { ts.push_back({q + "input_scale", "F32", {1}, f32s({1.f})}); },
       "tensor '" + q + "input_scale' is a static activation scale, but compressed-tensors (config.json) quantizes "
       "activations dynamically"},
      {Fp8ExportFormat::modelopt, [&](auto& ts) {
         StTensor* s = find(ts, kL0 + "self_attn.k_proj.k_scale");
         s->shape = {2};
         s->bytes = f32s({1.f, 1.f});
       },
       "tensor '" + kL0 + "self_attn.k_proj.k_scale' has shape [2], expected [] or [1] (a per-tensor KV cache scale)"},
      {Fp8ExportFormat::ct_channel,
       [&](auto& ts) {
         StTensor* n = find(ts, kL0 + "input_layernorm.weight");
         n->dtype = "F8_E4M3";
         n->bytes.resize(64);
       },
       "tensor '" + kL0 + "input_layernorm.weight' is F8_E4M3, but only linear weights may be FP8"},
      {Fp8ExportFormat::ct_channel,
       [&](auto& ts) {
         StTensor* t = find(ts, q + "weight");
         t->dtype = "F32";
         t->bytes.resize(t->bytes.size() * 4);
       },
       "tensor '" + q + "weight' is float32, but compressed-tensors (config.json) quantizes '" + kL0 +
           "self_attn.q_proj' (expected F8_E4M3, or the module in the ignore list)"},
  };
  for (const auto& c : cases) {
    const std::string dir = export_format(c.f);
    edit_model_tensors(dir, c.edit);
    expect_error([&] { load(dir); }, c.error);
  }
  // An ignored module stored in FP8.
  std::string dir = export_format(Fp8ExportFormat::ct_channel);
  edit_config(dir, [](json& j) { j["quantization_config"]["ignore"] = {"lm_head", "re:.*down_proj"}; });
  expect_error([&] { load(dir); }, "tensor '" + kL0 + "mlp.down_proj.weight' is F8_E4M3, but config.json leaves '" +
                                       kL0 + "mlp.down_proj' unquantized (ignore list)");
  // FP8 weights without any quantization config.
  dir = export_format(Fp8ExportFormat::fbgemm);
  edit_config(dir, [](json& j) { j.erase("quantization_config"); });
  expect_error([&] { load(dir); }, "is F8_E4M3, but config.json has no quantization_config");
  // Fused parts half quantized: q_proj ignored (and stored in float), k/v FP8.
  dir = export_format(Fp8ExportFormat::ct_channel);
  edit_config(dir, [](json& j) { j["quantization_config"]["ignore"] = {"lm_head", "re:.*layers\\.0\\.self_attn\\.q_proj"}; });
  edit_model_tensors(dir, [&](auto& ts) {
    std::erase_if(ts, [&](const StTensor& t) { return t.name == q + "weight_scale"; });
    StTensor* t = find(ts, q + "weight");
    t->dtype = "F32";
    t->bytes.resize(t->bytes.size() * 4);
  });
  expect_error([&] { load(dir); }, "'" + q + "weight' and the layers fused with it (3 parts) must be all FP8 or all unquantized");
}

}  // namespace
}  // namespace seam::test
