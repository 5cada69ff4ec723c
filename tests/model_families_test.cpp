// Issue 24's families on the CPU backend against transformers 5.17 in float32: tiny random
// checkpoints of Gemma 2, Gemma 3 (and its Gemma3ForConditionalGeneration wrapper), Phi-3
// (LongRoPE), Phi-4-mini (LongRoPE + partial rotary 0.75) and Mistral (window 8), made by
// tools/make_random_models.py with reference.json: transformers' last-token logits and 32
// greedy ids for prompts of 1, 17 and 40 tokens (windows of 8: 17 and 40 cross them).
//  - logits within 1e-4 relative (as tests/cuda/hf_parity_test.cpp measures), each prompt alone;
//  - the greedy ids equal through the whole engine, with graphs on, graphs off, and mixed
//    chunks of 16 tokens (prefill in pieces while others decode);
//  - the transformers-4 config layout (rope_theta / rope_scaling / rope_local_base_freq /
//    sliding_window_pattern) gives the same logits as the transformers-5 one (rope_parameters /
//    layer_types), and both tensor layouts of a multimodal Gemma 3 checkpoint load.
//
// LongRoPE past original_max_position_embeddings (32 here): transformers picks the table per
// forward by the sequence's length, so its 40-token prefill used the long factors for all 40
// tokens, and Phi3ForCausalLM's generate drops its cache and re-encodes the whole sequence with
// the long table at the step that feeds position 32. seam picks per token (positions >= 32 use
// the long table; cached keys never change), which equals transformers for every sequence that
// stays below 32. So for Phi: the 1-token prompt is held to the reference in full, the 17-token
// prompt's logits and its greedy ids up to the crossing, and the 40-token prompt with the short
// factors replaced by the long ones (then both use the long table for every token: the same
// model, and the long table and the attention factor are checked).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "model/model_config.h"
#include "runtime/model_runner.h"
#include "safetensors_writer.h"
#include "hf_reference.h"
#include "test_util.h"

namespace seam::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

std::vector<RefPrompt> reference(const std::string& name) { return load_hf_reference(tiny_dir(name)); }

EngineConfig cpu_config(const std::string& dir) {
  EngineConfig cfg;
  cfg.model_path = dir;
  cfg.device = Device::cpu;
  cfg.context_length = 256;
  cfg.max_total_tokens = 2048;
  return cfg;
}

// Last-token logits of each prompt alone (one EXTEND step each).
std::vector<std::vector<float>> prompt_logits(const std::string& dir, const std::vector<RefPrompt>& prompts) {
  Engine engine(cpu_config(dir));
  return run_logits(EngineBenchAccess::runner(engine), prompts, engine.model_info().vocab_size, 64, /*batched=*/false);
}

// The first 32 greedy ids of every prompt, all submitted at once; `n_mixed` gets the number of
// MIXED steps (prefill chunks run beside decodes).
std::vector<std::vector<int32_t>> greedy_ids(const EngineConfig& cfg, const std::vector<RefPrompt>& prompts,
                                             int* n_mixed = nullptr) {
  Engine engine(cfg);
  const GreedyRequests greedy = greedy_requests(prompts);
  std::vector<std::vector<int32_t>> out;
  for (const auto& r : engine.generate(greedy.prompts, greedy.params)) out.push_back(r.output_ids);
  engine.wait_idle();
  if (n_mixed) *n_mixed = int(engine.stats().to_json()["mixed"]);
  return out;
}

// A copy of a tiny model folder whose config.json is `edit(config)`.
std::string copy_with_config(const std::string& name, const std::function<void(json&)>& edit) {
  const std::string dir = make_temp_dir("family_" + name);
  for (const auto& e : fs::directory_iterator(tiny_dir(name))) fs::copy_file(e.path(), fs::path(dir) / e.path().filename());
  json cfg = json::parse(read_file(dir + "/config.json"));
  edit(cfg);
  write_file(dir + "/config.json", cfg.dump(2));
  return dir;
}

// The transformers-4 spelling of a transformers-5 config: rope_theta and rope_scaling (type,
// factors) at the top level instead of rope_parameters, Gemma 3's local base as
// rope_local_base_freq, Phi's original_max_position_embeddings and partial_rotary_factor at the
// top level, and no layer_types (the family's rule derives them: Gemma 2 every other layer,
// Gemma 3 sliding_window_pattern, Mistral every layer).
void to_transformers4_layout(json& top) {
  json& c = top.contains("text_config") ? top["text_config"] : top;
  json rp = c["rope_parameters"];
  c.erase("rope_parameters");
  c.erase("layer_types");
  c.erase("_sliding_window_pattern");
  auto as_scaling = [](json r) -> json {
    std::string type = r.value("rope_type", "default");
    for (const char* k : {"rope_theta", "rope_type", "type", "original_max_position_embeddings", "partial_rotary_factor"})
      r.erase(k);
    if (type == "default") return nullptr;
    r["type"] = type;  // Phi-3.5's spelling
    return r;
  };
  if (rp.contains("full_attention")) {
    c["rope_theta"] = rp["full_attention"]["rope_theta"];
    c["rope_scaling"] = as_scaling(rp["full_attention"]);
    c["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"];
  } else {
    c["rope_theta"] = rp["rope_theta"];
    if (rp.contains("partial_rotary_factor")) c["partial_rotary_factor"] = rp["partial_rotary_factor"];
    if (rp.contains("original_max_position_embeddings"))
      c["original_max_position_embeddings"] = rp["original_max_position_embeddings"];
    c["rope_scaling"] = as_scaling(rp);
  }
}

bool is_phi(const std::string& name) { return name.rfind("tiny-phi", 0) == 0; }

// How many of a prompt's 32 greedy ids seam shares with transformers by construction: all of
// them, except for Phi (LongRoPE, original_max 32) where transformers re-encodes the whole
// sequence with the long table at the step that feeds position 32 (module comment): the ids
// predicted before that step (output k comes from position n_prompt - 1 + k).
size_t n_ids_like_transformers(const std::string& name, size_t n_prompt) {
  constexpr size_t kOriginalMax = 32;
  if (!is_phi(name)) return 32;
  return n_prompt > kOriginalMax ? 0 : std::min<size_t>(32, kOriginalMax - n_prompt + 1);
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, LogitsMatchTransformers) {
  const std::string name = GetParam();
  const std::vector<RefPrompt> prompts = reference(name);
  ASSERT_EQ(prompts.size(), 3u);
  const auto logits = prompt_logits(tiny_dir(name), prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const double err = rel_err(logits[i], prompts[i].logits_fp32);
    std::printf("%s prompt of %zu tokens: rel err vs transformers fp32 %.3g\n", name.c_str(), prompts[i].ids.size(),
                err);
    // Phi's 40-token prompt crosses original_max in one forward: LongRopeLongTable holds it.
    if (is_phi(name) && prompts[i].ids.size() > 32) {
      EXPECT_GT(err, 1e-3) << "per-token LongRoPE differs from transformers' whole-prompt switch here";
      continue;
    }
    EXPECT_LT(err, 1e-4) << name << " prompt of " << prompts[i].ids.size();
  }
}

TEST_P(Family, GreedyIdsMatchTransformersUnderEveryScheduling) {
  const std::string name = GetParam();
  const std::vector<RefPrompt> prompts = reference(name);
  EngineConfig graphs = cpu_config(tiny_dir(name));
  EngineConfig eager = graphs;
  eager.disable_cuda_graph = true;
  EngineConfig mixed = graphs;
  mixed.enable_mixed_chunk = true;
  mixed.chunked_prefill_size = 16;
  std::vector<std::vector<int32_t>> first;
  for (const auto& [how, cfg] : {std::pair{"graphs", graphs}, {"no graphs", eager}, {"mixed chunk 16", mixed}}) {
    int n_mixed = 0;
    const auto ids = greedy_ids(cfg, prompts, &n_mixed);
    if (cfg.enable_mixed_chunk) EXPECT_GT(n_mixed, 0) << "the 40-token prompt's chunks ran beside decodes";
    if (first.empty()) first = ids;
    EXPECT_EQ(ids, first) << name << " " << how << ": every scheduling gives the same ids";
    for (size_t i = 0; i < prompts.size(); ++i) {
      const size_t n_exact = n_ids_like_transformers(name, prompts[i].ids.size());
      const std::vector<int32_t> got(ids[i].begin(), ids[i].begin() + long(n_exact));
      const std::vector<int32_t> want(prompts[i].greedy_fp32.begin(), prompts[i].greedy_fp32.begin() + long(n_exact));
      EXPECT_EQ(got, want) << name << " " << how << " prompt of " << prompts[i].ids.size();
    }
  }
}

TEST_P(Family, Transformers4ConfigLayoutGivesTheSameModel) {
  const std::string name = GetParam();
  const std::string dir = copy_with_config(name, to_transformers4_layout);
  const json rewritten = json::parse(read_file(dir + "/config.json"));
  ASSERT_FALSE(rewritten.dump().find("rope_parameters") != std::string::npos) << "the copy is in the old layout";
  const ModelConfig a = load_model_config(tiny_dir(name)), b = load_model_config(dir);
  EXPECT_EQ(a.layer_windows, b.layer_windows);
  EXPECT_EQ(rope_inv_freq(a), rope_inv_freq(b));
  EXPECT_EQ(a.rope_local.theta, b.rope_local.theta);
  EXPECT_EQ(a.rope_scaling.attention_factor, b.rope_scaling.attention_factor);
  const std::vector<RefPrompt> prompts = reference(name);
  EXPECT_EQ(prompt_logits(tiny_dir(name), prompts), prompt_logits(dir, prompts));
}

class Windowed : public ::testing::TestWithParam<std::string> {};
TEST_P(Windowed, TheReferenceDependsOnTheWindow) {
  // Without its window the model is another one: the 40-token prompt (past every window of 8)
  // no longer matches, so the matches above show the window attended within.
  const std::string name = GetParam();
  const std::string dir = copy_with_config(name, [](json& top) {
    json& c = top.contains("text_config") ? top["text_config"] : top;
    c["sliding_window"] = nullptr;
    c.erase("layer_types");
  });
  EXPECT_TRUE(load_model_config(dir).layer_windows.empty());
  const std::vector<RefPrompt> prompts = reference(name);
  const auto logits = prompt_logits(dir, {prompts[2]});
  EXPECT_GT(rel_err(logits[0], prompts[2].logits_fp32), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(HfTiny, Windowed,
                         ::testing::Values("tiny-gemma2", "tiny-gemma3", "tiny-gemma3-mm", "tiny-mistral"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(uint8_t(c)) ? c : '_';
                           return s;
                         });

INSTANTIATE_TEST_SUITE_P(HfTiny, Family,
                         ::testing::Values("tiny-gemma2", "tiny-gemma3", "tiny-gemma3-mm", "tiny-phi3", "tiny-phi4",
                                           "tiny-mistral"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(uint8_t(c)) ? c : '_';
                           return s;
                         });

// The 40-token prompt with the short factors set to the long ones: transformers' 40-token
// forward used the long table for every token, and so does seam now (module comment).
class LongRope : public ::testing::TestWithParam<std::string> {};
TEST_P(LongRope, LongTableMatchesTransformersOnThePromptPastOriginalMax) {
  const std::string name = GetParam();
  const std::string dir = copy_with_config(name, [](json& c) {
    c["rope_parameters"]["short_factor"] = c["rope_parameters"]["long_factor"];
  });
  std::vector<RefPrompt> prompts = reference(name);
  ASSERT_EQ(prompts[2].ids.size(), 40u);
  const std::vector<RefPrompt> long_prompt = {prompts[2]};
  const auto logits = prompt_logits(dir, long_prompt);
  const double err = rel_err(logits[0], prompts[2].logits_fp32);
  std::printf("%s (long table throughout) prompt of 40 tokens: rel err %.3g\n", name.c_str(), err);
  EXPECT_LT(err, 1e-4);
  EngineConfig cfg = cpu_config(dir);
  EXPECT_EQ(greedy_ids(cfg, long_prompt)[0], prompts[2].greedy_fp32);
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 16;
  EXPECT_EQ(greedy_ids(cfg, long_prompt)[0], prompts[2].greedy_fp32);
}
INSTANTIATE_TEST_SUITE_P(HfTiny, LongRope, ::testing::Values("tiny-phi3", "tiny-phi4"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(uint8_t(c)) ? c : '_';
                           return s;
                         });

// The hub's Gemma 3 exports (and transformers' save_pretrained, which the fixture comes from)
// name the text model language_model.model.* and the vision tower vision_tower.*;
// transformers 5's own module layout is model.language_model.* and model.vision_tower.*.
// Both load to the same model, the vision tensors skipped.
TEST(FamilyCheckpoints, Gemma3MultimodalBothTensorLayoutsLoad) {
  const std::string src = tiny_dir("tiny-gemma3-mm");
  const std::string dir = copy_with_config("tiny-gemma3-mm", [](json&) {});
  const std::string bytes = read_file(src + "/model.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  const json header = json::parse(bytes.substr(8, n));
  json renamed = json::object();
  int n_text = 0, n_vision = 0;
  for (const auto& [name, v] : header.items()) {
    std::string out = name;
    auto swap = [&](const std::string& from, const std::string& to) {
      if (out.rfind(from, 0) == 0) out = to + out.substr(from.size());
    };
    if (name.rfind("language_model.model.", 0) == 0) ++n_text;
    if (name.rfind("vision_tower.", 0) == 0 || name.rfind("multi_modal_projector.", 0) == 0) ++n_vision;
    swap("language_model.model.", "model.language_model.");
    swap("vision_tower.", "model.vision_tower.");
    swap("multi_modal_projector.", "model.multi_modal_projector.");
    renamed[out] = v;
  }
  ASSERT_GT(n_text, 0);
  ASSERT_GT(n_vision, 0) << "the fixture has a vision tower to skip";
  write_file(dir + "/model.safetensors", raw_safetensors(renamed.dump(), bytes.substr(8 + n)));
  const std::vector<RefPrompt> prompts = reference("tiny-gemma3-mm");
  EXPECT_EQ(prompt_logits(src, prompts), prompt_logits(dir, prompts));
}

}  // namespace
}  // namespace seam::test
