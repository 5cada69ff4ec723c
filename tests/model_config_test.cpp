// load_model_config and rope_inv_freq: the stories260K folder, configs of each
// supported family written here, and every error case (message names file and problem).
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::json;
using test::make_temp_dir;
using test::write_file;

// Writes `config` (and generation_config.json when given) to a fresh folder.
std::string folder_with(const json& config, const json* gen = nullptr) {
  std::string dir = make_temp_dir("cfg");
  test::write_config(dir, config);
  if (gen) write_file(dir + "/generation_config.json", gen->dump());
  return dir;
}

// Loads and expects seam::Error whose message contains every one of `parts`.
void expect_error(const std::string& dir, std::initializer_list<std::string> parts) {
  try {
    load_model_config(dir);
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one-line message: " << msg;
  }
}

TEST(ModelConfig, Stories260K) {
  ModelConfig c = load_model_config(test::stories_dir());
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.family, ModelFamily::llama);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.f);
  EXPECT_EQ(c.rope_scaling.type, RopeType::none);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.torch_dtype, DType::f32);
  // generation_config.json's list wins over config.json's single eos 2.
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.q_size(), 64);
  EXPECT_EQ(c.kv_size(), 32);

  // Plain RoPE over head_dim 8: 1, 10000^-0.25, 10000^-0.5, 10000^-0.75.
  std::vector<float> inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 4u);
  EXPECT_FLOAT_EQ(inv[0], 1.f);
  EXPECT_FLOAT_EQ(inv[1], 0.1f);
  EXPECT_FLOAT_EQ(inv[2], 0.01f);
  EXPECT_FLOAT_EQ(inv[3], 0.001f);
}

// Qwen2.5-0.5B-Instruct's config.json (abridged) and generation_config.json.
TEST(ModelConfig, Qwen2) {
  json cfg = {{"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", 896}, {"intermediate_size", 4864},
              {"num_hidden_layers", 24}, {"num_attention_heads", 14}, {"num_key_value_heads", 2},
              {"vocab_size", 151936}, {"max_position_embeddings", 32768}, {"hidden_act", "silu"},
              {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"rope_scaling", nullptr},
              {"sliding_window", 32768}, {"use_sliding_window", false}, {"max_window_layers", 21},
              {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 151643},
              {"eos_token_id", 151645}};
  json gen = {{"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}, {"do_sample", true}};
  ModelConfig c = load_model_config(folder_with(cfg, &gen));
  EXPECT_EQ(c.family, ModelFamily::qwen2);
  EXPECT_TRUE(c.attention_bias);  // Qwen2 always has q/k/v biases
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 64);  // 896 / 14
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.max_position_embeddings, 32768);  // use_sliding_window false: no cap
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.torch_dtype, DType::bf16);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(c.bos_token_id, 151643);
}

// Qwen3-0.6B's config.json (abridged): head_dim given, q_size 2048 != hidden 1024.
json qwen3_config() {
  return {{"architectures", {"Qwen3ForCausalLM"}}, {"hidden_size", 1024}, {"intermediate_size", 3072},
          {"num_hidden_layers", 28}, {"num_attention_heads", 16}, {"num_key_value_heads", 8},
          {"head_dim", 128}, {"vocab_size", 151936}, {"max_position_embeddings", 40960},
          {"hidden_act", "silu"}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000}, {"rope_scaling", nullptr},
          {"attention_bias", false}, {"sliding_window", nullptr}, {"use_sliding_window", false},
          {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 151643},
          {"eos_token_id", 151645}};
}

TEST(ModelConfig, Qwen3) {
  ModelConfig c = load_model_config(folder_with(qwen3_config()));
  EXPECT_EQ(c.family, ModelFamily::qwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_size(), 2048);
  EXPECT_EQ(c.kv_size(), 1024);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  // No generation_config.json: config.json's ids.
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{151645}));
  EXPECT_EQ(c.bos_token_id, 151643);

  json biased = qwen3_config();
  biased["attention_bias"] = true;  // honoured: q/k/v and o_proj biases
  ModelConfig b = load_model_config(folder_with(biased));
  EXPECT_TRUE(b.attention_bias);
  EXPECT_TRUE(b.o_proj_bias);
  EXPECT_TRUE(b.qk_norm);

  json no_key = qwen3_config();
  no_key.erase("attention_bias");  // Qwen3's default is false
  EXPECT_FALSE(load_model_config(folder_with(no_key)).attention_bias);
}

// Mistral-7B-v0.1 (abridged): every layer attends within the 4096 window; the context is the model's.
TEST(ModelConfig, Mistral) {
  json cfg = {{"architectures", {"MistralForCausalLM"}}, {"hidden_size", 4096}, {"intermediate_size", 14336},
              {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
              {"vocab_size", 32000}, {"max_position_embeddings", 32768}, {"hidden_act", "silu"},
              {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}, {"sliding_window", 4096},
              {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 1},
              {"eos_token_id", 2}};
  ModelConfig c = load_model_config(folder_with(cfg));
  EXPECT_EQ(c.family, ModelFamily::llama);
  EXPECT_EQ(c.architecture, "MistralForCausalLM");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.max_position_embeddings, 32768);  // the window is attended within, not a cap
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.layer_windows, std::vector<int>(32, 4096));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2}));

  cfg["sliding_window"] = nullptr;  // v0.2 / v0.3: no window
  ModelConfig v2 = load_model_config(folder_with(cfg));
  EXPECT_EQ(v2.max_position_embeddings, 32768);
  EXPECT_TRUE(v2.layer_windows.empty());
  EXPECT_EQ(v2.window(0), 0);
}

// Llama-3.1-8B-Instruct's config.json (abridged).
json llama31_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 4096}, {"intermediate_size", 14336},
          {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
          {"vocab_size", 128256}, {"max_position_embeddings", 131072}, {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0}, {"attention_bias", false}, {"mlp_bias", false},
          {"rope_scaling",
           {{"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 8192}, {"rope_type", "llama3"}}},
          {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 128000},
          {"eos_token_id", {128001, 128008, 128009}}};
}

// inv_freq for theta 500000, head_dim 128 with llama3 scaling (factor 8, low 1,
// high 4, original 8192), computed by hand (Python floats) from the definition:
// inv = 500000^(-2i/128), wavelen = 2*pi/inv; wavelen < 2048 keeps inv,
// wavelen > 8192 gives inv/8, otherwise s = (8192/wavelen - 1)/3 and
// (1-s)*inv/8 + s*inv.
void expect_llama31_inv_freq(const std::vector<float>& inv) {
  ASSERT_EQ(inv.size(), 64u);
  struct Want { int i; double v; };
  const Want want[] = {
      {0, 1.0}, {10, 1.286873734e-01}, {28, 3.211445995e-03},                                // high: unchanged
      {29, 2.166570764e-03}, {31, 8.567514129e-04}, {34, 1.785078128e-04},                   // smooth band
      {35, 9.556212354e-05}, {50, 4.411534675e-06}, {63, 3.068925989e-07},                   // low: / factor
  };
  for (const auto& w : want) EXPECT_NEAR(inv[w.i], w.v, w.v * 2e-6) << "index " << w.i;
}

TEST(ModelConfig, Llama31RopeScaling) {
  ModelConfig c = load_model_config(folder_with(llama31_config()));
  EXPECT_EQ(c.rope_scaling.type, RopeType::llama3);
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 8.f);
  EXPECT_FLOAT_EQ(c.rope_scaling.low_freq_factor, 1.f);
  EXPECT_FLOAT_EQ(c.rope_scaling.high_freq_factor, 4.f);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.f);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  expect_llama31_inv_freq(rope_inv_freq(c));

  // Without scaling the same indices are the plain frequencies.
  ModelConfig plain = c;
  plain.rope_scaling = RopeScaling{};
  std::vector<float> p = rope_inv_freq(plain);
  EXPECT_NEAR(p[35], 7.644969883e-04, 7.6e-04 * 2e-6);
  EXPECT_NEAR(p[29], 2.616099253e-03, 2.6e-03 * 2e-6);
}

// transformers 5 writes "dtype" and moves rope_theta into rope_parameters.
TEST(ModelConfig, Transformers5RopeParameters) {
  json cfg = llama31_config();
  cfg.erase("rope_scaling");
  cfg.erase("rope_theta");
  cfg.erase("torch_dtype");
  cfg["dtype"] = "float16";
  cfg["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0},
                            {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 8192}};
  ModelConfig c = load_model_config(folder_with(cfg));
  EXPECT_EQ(c.torch_dtype, DType::f16);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.f);
  EXPECT_EQ(c.rope_scaling.type, RopeType::llama3);
  expect_llama31_inv_freq(rope_inv_freq(c));

  // A plain model in the same style.
  json plain = test::tiny_config_json();
  plain.erase("rope_theta");
  plain["rope_parameters"] = {{"rope_theta", 1234.0}, {"rope_type", "default"}};
  ModelConfig p = load_model_config(folder_with(plain));
  EXPECT_FLOAT_EQ(p.rope_theta, 1234.f);
  EXPECT_EQ(p.rope_scaling.type, RopeType::none);
}

TEST(ModelConfig, DefaultsAndNulls) {
  json cfg = test::tiny_config_json();
  cfg["head_dim"] = nullptr;
  cfg.erase("num_key_value_heads");
  cfg.erase("rope_theta");
  cfg.erase("tie_word_embeddings");
  cfg["rope_scaling"] = {{"type", "default"}};  // older spelling of rope_type
  cfg["eos_token_id"] = {2, 3};
  ModelConfig c = load_model_config(folder_with(cfg));
  EXPECT_EQ(c.head_dim, 4);    // 16 / 4
  EXPECT_EQ(c.n_kv_heads, 4);  // = heads
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.f);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_scaling.type, RopeType::none);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 3}));
}

// ---- errors: each names the file and the problem ----

// The tiny transformers-5 configs of issue 24's families (tests/data/hf_tiny).
json tiny_family(const std::string& name) {
  return json::parse(test::read_file(std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name + "/config.json"));
}

TEST(ModelConfig, Gemma2) {
  ModelConfig c = load_model_config(folder_with(tiny_family("tiny-gemma2")));
  EXPECT_EQ(c.family, ModelFamily::gemma2);
  EXPECT_TRUE(c.gemma_norms);
  EXPECT_EQ(c.hidden_act, MlpActivation::gelu_tanh);
  EXPECT_EQ(c.layer_windows, (std::vector<int>{8, 0, 8, 0}));
  EXPECT_FLOAT_EQ(c.attn_logit_softcap, 5.f);
  EXPECT_FLOAT_EQ(c.final_logit_softcap, 3.f);
  EXPECT_FLOAT_EQ(c.query_pre_attn_scalar, 24.f);
  EXPECT_TRUE(c.tie_word_embeddings);
  // Gemma2Config's defaults: a missing soft-cap is 50 / 30, a null one is off; a missing
  // window is 4096 on every other layer.
  json cfg = tiny_family("tiny-gemma2");
  cfg.erase("attn_logit_softcapping");
  cfg["final_logit_softcapping"] = nullptr;
  cfg.erase("layer_types");
  cfg.erase("sliding_window");
  cfg.erase("tie_word_embeddings");
  ModelConfig d = load_model_config(folder_with(cfg));
  EXPECT_FLOAT_EQ(d.attn_logit_softcap, 50.f);
  EXPECT_FLOAT_EQ(d.final_logit_softcap, 0.f);
  EXPECT_EQ(d.layer_windows, (std::vector<int>{4096, 0, 4096, 0}));
  EXPECT_TRUE(d.tie_word_embeddings) << "Gemma ties by default";
}

TEST(ModelConfig, Gemma3LocalAndGlobalRope) {
  ModelConfig c = load_model_config(folder_with(tiny_family("tiny-gemma3")));
  EXPECT_EQ(c.family, ModelFamily::gemma3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.layer_windows, (std::vector<int>{8, 8, 0, 8, 8, 0}));
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.rope_scaling.type, RopeType::linear);
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 8.f);
  EXPECT_FLOAT_EQ(c.rope_local.theta, 1e4f);
  EXPECT_EQ(c.rope_local.scaling.type, RopeType::none);
  EXPECT_FLOAT_EQ(c.attn_logit_softcap, 0.f);
  const std::vector<float> global = rope_inv_freq(c), local = rope_inv_freq(c.rope_local, c.rotary_dim);
  ASSERT_EQ(global.size(), 8u);
  EXPECT_FLOAT_EQ(global[1], float(1.0 / std::pow(1e6, 2.0 / 16) / 8));
  EXPECT_FLOAT_EQ(local[1], float(1.0 / std::pow(1e4, 2.0 / 16)));

  // Without a window the layer types still pick each layer's RoPE table (transformers: by type).
  json no_window = tiny_family("tiny-gemma3");
  no_window["sliding_window"] = nullptr;
  no_window.erase("layer_types");
  ModelConfig nw = load_model_config(folder_with(no_window));
  EXPECT_TRUE(nw.layer_windows.empty());
  EXPECT_EQ(nw.sliding_layers, (std::vector<bool>{true, true, false, true, true, false}));

  ModelConfig mm = load_model_config(folder_with(tiny_family("tiny-gemma3-mm")));
  EXPECT_TRUE(mm.text_of_multimodal);
  EXPECT_EQ(mm.layer_windows, c.layer_windows);
  EXPECT_EQ(mm.vocab_size, 512);
}

TEST(ModelConfig, Phi3LongRopeAndPartialRotary) {
  ModelConfig c = load_model_config(folder_with(tiny_family("tiny-phi4")));
  EXPECT_EQ(c.family, ModelFamily::phi3);
  EXPECT_EQ(c.rotary_dim, 12);  // head_dim 16 * 0.75
  EXPECT_EQ(c.rope_scaling.type, RopeType::longrope);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32);
  // sqrt(1 + ln(256 / 32) / ln(32)) = sqrt(1.6)
  EXPECT_FLOAT_EQ(c.rope_scaling.attention_factor, float(std::sqrt(1.6)));
  const std::vector<float> s = rope_inv_freq(c), l = rope_inv_freq(c.rope_global(), c.rotary_dim, true);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_FLOAT_EQ(s[2], float(1.0 / (1.24 * std::pow(1e4, 4.0 / 12))));
  EXPECT_FLOAT_EQ(l[2], float(1.0 / (10.44 * std::pow(1e4, 4.0 / 12))));
  json cfg = tiny_family("tiny-phi4");
  cfg["rope_parameters"]["attention_factor"] = 1.25;
  EXPECT_FLOAT_EQ(load_model_config(folder_with(cfg)).rope_scaling.attention_factor, 1.25f);
}

TEST(ModelConfig, SlidingWindowRules) {
  // Qwen2 with use_sliding_window: layers from max_window_layers on slide; without it none do.
  json q = test::tiny_config_json("Qwen2ForCausalLM");
  q["num_hidden_layers"] = 4;
  q["sliding_window"] = 16;
  q["max_window_layers"] = 2;
  EXPECT_TRUE(load_model_config(folder_with(q)).layer_windows.empty());
  q["use_sliding_window"] = true;
  EXPECT_EQ(load_model_config(folder_with(q)).layer_windows, (std::vector<int>{0, 0, 16, 16}));
  // LlamaConfig has no window: transformers ignores the key, so does seam.
  json l = test::tiny_config_json();
  l["sliding_window"] = 16;
  EXPECT_TRUE(load_model_config(folder_with(l)).layer_windows.empty());
}

TEST(ModelConfigErrors, FamilyFieldsSeamDoesNotHonour) {
  auto edited = [](const char* name, const std::function<void(json&)>& edit) {
    json cfg = tiny_family(name);
    edit(cfg);
    return folder_with(cfg);
  };
  expect_error(edited("tiny-gemma2", [](json& c) { c["hidden_activation"] = "gelu"; }),
               {"config.json: field 'hidden_activation' is 'gelu' (supported: gelu_pytorch_tanh)"});
  expect_error(edited("tiny-mistral", [](json& c) { c["attn_logit_softcapping"] = 30.0; }),
               {"config.json: field 'attn_logit_softcapping' is not supported for MistralForCausalLM"});
  expect_error(edited("tiny-phi3", [](json& c) { c["final_logit_softcapping"] = 30.0; }),
               {"field 'final_logit_softcapping' is not supported for Phi3ForCausalLM"});
  expect_error(edited("tiny-phi3", [](json& c) { c["rope_parameters"]["rope_type"] = "yarn"; }),
               {"config.json: rope_parameters type 'yarn' is not supported"});
  expect_error(edited("tiny-phi3", [](json& c) { c["rope_parameters"]["short_factor"] = {1.0, 2.0}; }),
               {"field 'rope_parameters.short_factor' must be a list of rotary_dim / 2 = 8 numbers"});
  expect_error(edited("tiny-phi3", [](json& c) {
                 c["rope_parameters"].erase("original_max_position_embeddings");
                 c.erase("original_max_position_embeddings");
               }),
               {"missing field 'original_max_position_embeddings' (required by rope type longrope)"});
  expect_error(edited("tiny-gemma3", [](json& c) { c["layer_types"][1] = "chunked_attention"; }),
               {"config.json: layer_types[1] is 'chunked_attention'"});
  expect_error(edited("tiny-gemma3", [](json& c) { c["layer_types"].erase(0); }),
               {"field 'layer_types' must list num_hidden_layers (6) layer types"});
  expect_error(edited("tiny-gemma3", [](json& c) { c["use_bidirectional_attention"] = true; }),
               {"field 'use_bidirectional_attention' is true"});
  expect_error(edited("tiny-gemma3", [](json& c) { c["rope_parameters"]["chunked_attention"] = json::object(); }),
               {"'rope_parameters.chunked_attention' is not a layer type"});
  expect_error(edited("tiny-mistral", [](json& c) {
                 c["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e4}}}};
               }),
               {"'rope_parameters' per layer type is not supported for MistralForCausalLM"});
  expect_error(edited("tiny-mistral", [](json& c) { c["rope_local_base_freq"] = 1e4; }),
               {"field 'rope_local_base_freq' is not used by MistralForCausalLM"});
  expect_error(edited("tiny-mistral", [](json& c) { c["partial_rotary_factor"] = 0.5; }),
               {"field 'partial_rotary_factor' (0.5) is not supported for MistralForCausalLM"});
  expect_error(edited("tiny-mistral", [](json& c) { c["query_pre_attn_scalar"] = 64; }),
               {"field 'query_pre_attn_scalar' is not used by MistralForCausalLM"});
  expect_error(edited("tiny-gemma3-mm", [](json& c) { c.erase("text_config"); }),
               {"missing field 'text_config' (required by Gemma3ForConditionalGeneration)"});
}

TEST(ModelConfigErrors, MissingConfig) {
  std::string dir = make_temp_dir("cfg_missing");
  expect_error(dir, {"config.json", "not found"});
  expect_error(dir + "/nope", {"nope", "not found"});
}

TEST(ModelConfigErrors, MalformedJson) {
  std::string dir = make_temp_dir("cfg_bad");
  write_file(dir + "/config.json", "{\n  \"hidden_size\": 64,\n  \"vocab_size\": ,\n}\n");
  expect_error(dir, {"config.json: malformed JSON at line 3"});
}

TEST(ModelConfigErrors, UnknownArchitecture) {
  json cfg = test::tiny_config_json("GPT2LMHeadModel");
  expect_error(folder_with(cfg), {"config.json: unknown architecture 'GPT2LMHeadModel' (supported: ",
                                  "LlamaForCausalLM", "Qwen3ForCausalLM"});
  cfg.erase("architectures");
  expect_error(folder_with(cfg), {"config.json: missing field 'architectures'"});
}

TEST(ModelConfigErrors, MissingField) {
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "vocab_size", "max_position_embeddings"}) {
    json cfg = test::tiny_config_json();
    cfg.erase(key);
    expect_error(folder_with(cfg), {std::string("config.json: missing field '") + key + "'"});
  }
}

TEST(ModelConfigErrors, BadValues) {
  auto with = [](const char* key, json v) {
    json cfg = test::tiny_config_json();
    cfg[key] = std::move(v);
    return folder_with(cfg);
  };
  expect_error(with("hidden_size", 0), {"config.json: field 'hidden_size' must be positive"});
  expect_error(with("num_hidden_layers", -2), {"config.json: field 'num_hidden_layers' must be positive"});
  expect_error(with("hidden_size", "64"), {"config.json: field 'hidden_size' must be an integer, got string"});
  expect_error(with("intermediate_size", 24.5), {"config.json: field 'intermediate_size' must be an integer"});
  expect_error(with("num_key_value_heads", 3), {"config.json: num_attention_heads 4 is not divisible by "
                                                "num_key_value_heads 3"});
  expect_error(with("num_attention_heads", 3), {"config.json: hidden_size 16 is not divisible by "
                                                "num_attention_heads 3"});
  expect_error(with("head_dim", 5), {"config.json: head_dim 5 must be even"});
  expect_error(with("hidden_act", "gelu"), {"config.json: field 'hidden_act' is 'gelu' (supported: silu)"});
  expect_error(with("mlp_bias", true), {"config.json: field 'mlp_bias' is true"});
  expect_error(with("torch_dtype", "int8"), {"config.json: field 'torch_dtype' is 'int8'"});
  expect_error(with("rms_norm_eps", -1.0), {"config.json: field 'rms_norm_eps' must be positive"});
  expect_error(with("eos_token_id", 32), {"config.json: eos_token_id 32 is not below vocab_size 32"});
  expect_error(with("tie_word_embeddings", "yes"), {"config.json: field 'tie_word_embeddings' must be true or false"});
}

TEST(ModelConfigErrors, UnsupportedRope) {
  for (const char* type : {"yarn", "dynamic", "su"}) {
    json cfg = test::tiny_config_json();
    cfg["rope_scaling"] = {{"rope_type", type}, {"factor", 4.0}};
    expect_error(folder_with(cfg), {std::string("config.json: rope_scaling type '") + type + "' is not supported"});
  }
  json cfg = test::tiny_config_json();
  cfg["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 4.0}};
  expect_error(folder_with(cfg), {"config.json: rope_parameters type 'yarn' is not supported"});

  json partial = llama31_config();
  partial["rope_scaling"].erase("low_freq_factor");
  expect_error(folder_with(partial), {"config.json: missing field 'rope_scaling.low_freq_factor'"});

  json inverted = llama31_config();
  inverted["rope_scaling"]["high_freq_factor"] = 1.0;
  expect_error(folder_with(inverted), {"config.json: 'rope_scaling.high_freq_factor' (1) must be greater"});

  json disagree = test::tiny_config_json();
  disagree["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "default"}};
  expect_error(folder_with(disagree), {"config.json: 'rope_theta' (10000) and 'rope_parameters.rope_theta' "
                                       "(500000) disagree"});
}

TEST(ModelConfigErrors, GenerationConfig) {
  std::string dir = folder_with(test::tiny_config_json());
  write_file(dir + "/generation_config.json", "{\"eos_token_id\": [1, 2,]}");
  expect_error(dir, {"generation_config.json: malformed JSON at line 1"});

  json gen = {{"eos_token_id", {1, 40}}};
  expect_error(folder_with(test::tiny_config_json(), &gen),
               {"generation_config.json: eos_token_id 40 is not below vocab_size 32"});
  json gen_str = {{"eos_token_id", "</s>"}};
  expect_error(folder_with(test::tiny_config_json(), &gen_str),
               {"generation_config.json: field 'eos_token_id' must be an integer"});
}

}  // namespace
}  // namespace seam
