// --load-format dummy (Checkpoint::dummy, model/dummy_weights.h, Backend::fill_random): a model
// built from config.json and a tokenizer alone, on the cpu backend.
//  - every tiny family (MoE, fused Phi-3 with its LongRoPE fold, Gemma 3's (1 + w) norms) loads
//    from a folder with no safetensors, gives finite last-token logits that are not flat, and
//    two loads give the same logits bit for bit; greedy decoding runs with graphs on, with no
//    capture after the seal;
//  - the dummy model equals the same values written to safetensors and loaded from the file, bit
//    for bit, in float32 and with --quantization fp8 (whose online quantization computes the
//    random values on the host);
//  - the random stream: a row view continues the stream, the backend's fill equals the host's
//    values, values stay in their range and are not constant;
//  - errors: an unknown --load-format, a folder without a tokenizer, a serialized FP8 config.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "hf_reference.h"
#include "model/checkpoint.h"
#include "model/model_config.h"
#include "runtime/model_runner.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam::test {
namespace {

namespace fs = std::filesystem;

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

// A folder with the tiny model's config.json and tokenizer.json only (no weights).
std::string config_only_copy(const std::string& name, bool with_tokenizer = true) {
  const std::string dir = make_temp_dir("dummy_" + name);
  fs::copy_file(tiny_dir(name) + "/config.json", dir + "/config.json");
  if (with_tokenizer) fs::copy_file(tiny_dir(name) + "/tokenizer.json", dir + "/tokenizer.json");
  return dir;
}

EngineConfig dummy_config(const std::string& dir) {
  EngineConfig cfg = tiny_engine_config(dir);
  cfg.load_format = "dummy";
  return cfg;
}

// The reference prompts' ids (only the ids: dummy weights are not transformers').
std::vector<RefPrompt> prompts_of(const std::string& name) {
  std::vector<RefPrompt> p = load_hf_reference(tiny_dir(name));
  for (RefPrompt& r : p) r.logits_fp32.clear(), r.greedy_fp32.clear();
  return p;
}

std::vector<std::vector<float>> dummy_logits(const EngineConfig& cfg, const std::vector<RefPrompt>& prompts) {
  Engine engine(cfg);
  return run_logits(EngineBenchAccess::runner(engine), prompts, engine.model_info().vocab_size, 64,
                    /*batched=*/false);
}

double stddev(const std::vector<float>& v) {
  double s = 0, s2 = 0;
  for (float x : v) s += x, s2 += double(x) * x;
  const double m = s / double(v.size());
  return std::sqrt(std::max(0.0, s2 / double(v.size()) - m * m));
}

class DummyLoadFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(DummyLoadFamilies, FiniteSpreadLogitsAndReproducible) {
  const std::string name = GetParam();
  const std::string dir = config_only_copy(name);
  ASSERT_FALSE(fs::exists(dir + "/model.safetensors"));
  const std::vector<RefPrompt> prompts = prompts_of(name);
  EngineConfig cfg = dummy_config(dir);
  cfg.disable_cuda_graph = true;  // (graphs: GreedyDecodeUnderGraphs)
  const auto a = dummy_logits(cfg, prompts);
  const auto b = dummy_logits(cfg, prompts);
  ASSERT_EQ(a.size(), prompts.size());
  for (size_t i = 0; i < a.size(); ++i) {
    for (float x : a[i]) ASSERT_TRUE(std::isfinite(x)) << name << " prompt " << i;
    // Unit-variance projections (dummy_weights.h): logits of order 1, not flat.
    EXPECT_GT(stddev(a[i]), 0.05) << name << " prompt " << i;
    EXPECT_EQ(a[i], b[i]) << name << ": two dummy loads must give the same weights";
  }
}

class DummyLoadMoe : public ::testing::TestWithParam<std::string> {};

TEST_P(DummyLoadMoe, GreedyDecodeUnderGraphs) {
  const std::string name = GetParam();
  Engine engine(dummy_config(config_only_copy(name)));
  const std::vector<RefPrompt> prompts = prompts_of(name);
  const GreedyRequests greedy = greedy_requests(prompts, 8);
  const auto results = engine.generate(greedy.prompts, greedy.params);
  for (const auto& r : results) {
    ASSERT_EQ(r.output_ids.size(), 8u);
    for (int32_t id : r.output_ids) EXPECT_TRUE(id >= 0 && id < engine.model_info().vocab_size);
  }
  engine.wait_idle();
  const auto stats = engine.stats().to_json();
  EXPECT_EQ(stats["captures_after_seal"], 0);
  EXPECT_GT(int(stats["decode_graph_replays"]), 0);
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) { return hf_tiny_param_name(info.param); }

INSTANTIATE_TEST_SUITE_P(Tiny, DummyLoadFamilies,
                         ::testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral", "tiny-phi3",
                                           "tiny-gemma3", "tiny-mistral"),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Tiny, DummyLoadMoe, ::testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"),
                         param_name);

// The dummy checkpoint's tensors written out as a safetensors file (their values computed on
// the host), beside the config and tokenizer.
std::string materialized_copy(const std::string& name) {
  const std::string dir = config_only_copy(name);
  const auto ck = Checkpoint::dummy(load_model_config(dir));
  std::vector<const HostTensor*> all = {&ck->embed_tokens, &ck->norm, &ck->lm_head};
  for (const LayerTensors& l : ck->layers) {
    for (const HostTensor* t : {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias,
                                &l.q_norm, &l.k_norm, &l.o_proj, &l.o_bias, &l.post_attention_layernorm,
                                &l.pre_feedforward_layernorm, &l.post_feedforward_layernorm, &l.gate_proj, &l.up_proj,
                                &l.down_proj, &l.moe.router, &l.moe.shared_gate_proj, &l.moe.shared_up_proj,
                                &l.moe.shared_down_proj, &l.moe.shared_expert_gate})
      all.push_back(t);
    for (const auto* v : {&l.moe.gate, &l.moe.up, &l.moe.down})
      for (const HostTensor& t : *v) all.push_back(&t);
  }
  std::vector<StTensor> out;
  std::set<std::string> seen;  // a tied head is the embedding
  for (const HostTensor* t : all) {
    if (!t->defined() || !seen.insert(t->name).second) continue;
    std::vector<float> v(size_t(t->numel()));
    t->to_f32(v.data());
    out.push_back({t->name, "F32", t->shape, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)});
  }
  write_safetensors(dir + "/model.safetensors", out);
  return dir;
}

// The device fill and the file path give the same model: dummy logits equal those of the same
// values loaded from safetensors, bit for bit, in float32 and with --quantization fp8 (whose
// online quantization reads a dummy weight's values through HostTensor::to_f32).
TEST(DummyLoad, EqualsTheSameValuesLoadedFromAFile) {
  const std::string name = "tiny-qwen3-moe";
  const std::vector<RefPrompt> prompts = prompts_of(name);
  EngineConfig from_file = dummy_config(materialized_copy(name));
  from_file.load_format = "safetensors";
  from_file.disable_cuda_graph = true;
  EngineConfig dummy = dummy_config(config_only_copy(name));
  dummy.disable_cuda_graph = true;
  const auto a = dummy_logits(dummy, prompts), b = dummy_logits(from_file, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(a[i], b[i]) << "prompt " << i;
  dummy.quantization = from_file.quantization = "fp8";
  const auto a8 = dummy_logits(dummy, prompts), b8 = dummy_logits(from_file, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(a8[i], b8[i]) << "fp8, prompt " << i;
    EXPECT_NE(a8[i], a[i]) << "--quantization fp8 quantizes the attention projections";
  }
}

TEST(DummyWeights, StreamRowsBackendFillAndRange) {
  const ModelConfig c = load_model_config(tiny_dir("tiny-qwen3-moe"));
  const auto ck = Checkpoint::dummy(c);
  const HostTensor& q = ck->layers[0].q_proj;  // [q_size, hidden]
  ASSERT_TRUE(q.random && q.defined() && q.data == nullptr);
  std::vector<float> all(size_t(q.numel()));
  q.to_f32(all.data());
  const float bound = std::sqrt(3.f / float(c.hidden_size));
  float lo = 1e9f, hi = -1e9f;
  for (float x : all) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -bound);
  EXPECT_LT(hi, bound);
  EXPECT_LT(lo, -0.5f * bound) << "spread over the range";
  EXPECT_GT(hi, 0.5f * bound);

  const HostTensor tail = q.rows(3, 2);
  std::vector<float> part(size_t(tail.numel()));
  tail.to_f32(part.data());
  EXPECT_EQ(part, std::vector<float>(all.begin() + 3 * c.hidden_size, all.begin() + 5 * c.hidden_size));

  const HostTensor& norm = ck->layers[0].input_layernorm;
  std::vector<float> nv(size_t(norm.numel()));
  norm.to_f32(nv.data());
  for (float x : nv) EXPECT_TRUE(x >= 0.9f && x < 1.1f) << "an RMSNorm weight is 1 +- 0.1";
  EXPECT_NE(nv.front(), nv.back());

  // Different names, different streams; the backend's fill is the host's values.
  EXPECT_NE(ck->layers[0].q_proj.fill.seed, ck->layers[1].q_proj.fill.seed);
  CpuBackend be;
  std::vector<float> dev(all.size());
  be.fill_random(Tensor(dev.data(), DType::f32, Device::cpu, {q.numel()}), q.fill);
  EXPECT_EQ(dev, all);
}

TEST(DummyLoadErrors, UnknownFormatMissingTokenizerAndFp8Checkpoint) {
  EngineConfig cfg = dummy_config(config_only_copy("tiny-mistral"));
  cfg.load_format = "pt";
  EXPECT_THROW(
      {
        try {
          Engine e(cfg);
        } catch (const Error& err) {
          EXPECT_NE(std::string(err.what()).find("--load-format: 'pt'"), std::string::npos) << err.what();
          throw;
        }
      },
      Error);

  const EngineConfig no_tok = dummy_config(config_only_copy("tiny-mistral", /*with_tokenizer=*/false));
  try {
    Engine e(no_tok);
    FAIL() << "a dummy model without a tokenizer must be refused";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("tokenizer.json"), std::string::npos) << err.what();
  }

  // A serialized FP8 format: its scales cannot come from a random fill.
  const std::string dir = config_only_copy("tiny-mistral");
  nlohmann::json j = nlohmann::json::parse(read_file(dir + "/config.json"));
  j["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
  write_file(dir + "/config.json", j.dump());
  ModelConfig c = load_model_config(dir);
  ASSERT_TRUE(c.quant.serialized());
  try {
    Checkpoint::dummy(c);
    FAIL() << "a serialized FP8 config must be refused with --load-format dummy";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("--quantization fp8"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace seam::test
