// The model registry: the supported architectures and their family rules, a clear error
// for any other, and every registered architecture built through it (weights accounted
// once each, the forward running on the cpu backend).
#include "model/model_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "kv/kv_pool.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "runtime/model_runner.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam {
namespace {

TEST(ModelRegistry, ListsTheSupportedArchitecturesWithTheirFamilyRules) {
  std::vector<std::string> names;
  for (const ModelDefinition& d : model_definitions()) names.push_back(d.architecture);
  EXPECT_EQ(names, (std::vector<std::string>{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                                             "Qwen3ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM",
                                             "Gemma3ForConditionalGeneration", "Phi3ForCausalLM", "Qwen2MoeForCausalLM",
                                             "Qwen3MoeForCausalLM", "MixtralForCausalLM"}));
  const ModelDefinition* llama = find_model_definition("LlamaForCausalLM");
  const ModelDefinition* mistral = find_model_definition("MistralForCausalLM");
  const ModelDefinition* qwen2 = find_model_definition("Qwen2ForCausalLM");
  const ModelDefinition* qwen3 = find_model_definition("Qwen3ForCausalLM");
  ASSERT_TRUE(llama && mistral && qwen2 && qwen3);
  EXPECT_EQ(llama->family, ModelFamily::llama);
  EXPECT_EQ(mistral->family, ModelFamily::llama);
  EXPECT_EQ(qwen2->family, ModelFamily::qwen2);
  EXPECT_EQ(qwen3->family, ModelFamily::qwen3);
  EXPECT_EQ(qwen2->attention_bias, AttentionBiasRule::qkv_always);
  for (const ModelDefinition* d : {llama, mistral, qwen3}) EXPECT_EQ(d->attention_bias, AttentionBiasRule::from_config);
  EXPECT_TRUE(qwen3->qk_norm);
  for (const ModelDefinition* d : {llama, mistral, qwen2}) EXPECT_FALSE(d->qk_norm);
  EXPECT_EQ(qwen2->sliding_window, SlidingWindowRule::opt_in);
  EXPECT_EQ(qwen3->sliding_window, SlidingWindowRule::opt_in);
  EXPECT_EQ(llama->sliding_window, SlidingWindowRule::none);
  EXPECT_EQ(mistral->sliding_window, SlidingWindowRule::always);
  const ModelDefinition* gemma2 = find_model_definition("Gemma2ForCausalLM");
  const ModelDefinition* gemma3 = find_model_definition("Gemma3ForCausalLM");
  const ModelDefinition* gemma3_mm = find_model_definition("Gemma3ForConditionalGeneration");
  const ModelDefinition* phi3 = find_model_definition("Phi3ForCausalLM");
  ASSERT_TRUE(gemma2 && gemma3 && gemma3_mm && phi3);
  EXPECT_EQ(gemma2->family, ModelFamily::gemma2);
  EXPECT_EQ(gemma2->sliding_window, SlidingWindowRule::alternating);
  EXPECT_FALSE(gemma2->qk_norm);
  EXPECT_EQ(gemma3->family, ModelFamily::gemma3);
  EXPECT_EQ(gemma3->sliding_window, SlidingWindowRule::pattern);
  EXPECT_TRUE(gemma3->qk_norm && gemma3_mm->qk_norm);
  EXPECT_EQ(gemma3_mm->family, ModelFamily::gemma3);
  EXPECT_TRUE(gemma3_mm->text_config_nested);
  EXPECT_FALSE(gemma3->text_config_nested || gemma2->text_config_nested || phi3->text_config_nested);
  EXPECT_EQ(phi3->family, ModelFamily::phi3);
  EXPECT_EQ(phi3->sliding_window, SlidingWindowRule::always);
  EXPECT_EQ(supported_architectures(),
            "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
            "Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Phi3ForCausalLM, Qwen2MoeForCausalLM, "
            "Qwen3MoeForCausalLM, MixtralForCausalLM");
  for (const ModelDefinition* d : {llama, mistral, qwen2, qwen3, gemma2, gemma3, gemma3_mm, phi3})
    EXPECT_EQ(d->moe, MoeStyle::none);
}

TEST(ModelRegistry, MixtureOfExpertsArchitecturesAndTheirRules) {
  const ModelDefinition* qwen2_moe = find_model_definition("Qwen2MoeForCausalLM");
  const ModelDefinition* qwen3_moe = find_model_definition("Qwen3MoeForCausalLM");
  const ModelDefinition* mixtral = find_model_definition("MixtralForCausalLM");
  ASSERT_TRUE(qwen2_moe && qwen3_moe && mixtral);
  EXPECT_EQ(qwen2_moe->moe, MoeStyle::qwen2);
  EXPECT_EQ(qwen3_moe->moe, MoeStyle::qwen3);
  EXPECT_EQ(mixtral->moe, MoeStyle::mixtral);
  // Attention as the dense relatives: Qwen2-MoE's q/k/v bias from qkv_bias, Qwen3-MoE's q/k norm,
  // Qwen's opt-in window, Mixtral as Mistral (sliding_window on every layer whenever given).
  EXPECT_EQ(qwen2_moe->attention_bias, AttentionBiasRule::qkv_from_qkv_bias);
  EXPECT_EQ(qwen3_moe->attention_bias, AttentionBiasRule::from_config);
  EXPECT_EQ(mixtral->attention_bias, AttentionBiasRule::from_config);
  EXPECT_TRUE(qwen3_moe->qk_norm);
  EXPECT_FALSE(qwen2_moe->qk_norm || mixtral->qk_norm);
  EXPECT_EQ(qwen2_moe->sliding_window, SlidingWindowRule::opt_in);
  EXPECT_EQ(qwen3_moe->sliding_window, SlidingWindowRule::opt_in);
  EXPECT_EQ(mixtral->sliding_window, SlidingWindowRule::always);
  EXPECT_FALSE(qwen2_moe->text_config_nested || qwen3_moe->text_config_nested || mixtral->text_config_nested);
  EXPECT_EQ(qwen2_moe->family, ModelFamily::qwen2);
  EXPECT_EQ(qwen3_moe->family, ModelFamily::qwen3);
  EXPECT_EQ(mixtral->family, ModelFamily::llama);
}

TEST(ModelRegistry, UnknownArchitectureIsAClearErrorListingTheSupportedOnes) {
  EXPECT_EQ(find_model_definition("GPT2LMHeadModel"), nullptr);
  EXPECT_EQ(find_model_definition("llamaforcausallm"), nullptr) << "names match exactly, as transformers does";
  ModelConfig c = load_model_config(test::stories_dir());
  c.architecture = "GPT2LMHeadModel";
  auto ck = Checkpoint::open(test::stories_dir(), load_model_config(test::stories_dir()));
  CpuBackend be;
  try {
    create_model(be, c, *ck, DType::f32);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown architecture 'GPT2LMHeadModel'"), std::string::npos) << msg;
    for (const ModelDefinition& d : model_definitions())
      EXPECT_NE(msg.find(d.architecture), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
}

// Sum of the bytes of `t` as float32 (the cpu backend's weights).
size_t f32_bytes(const HostTensor& t) { return t.defined() ? size_t(t.numel()) * 4 : 0; }

// Every weight of the checkpoint once; a tied head is the embedding, not a second matrix.
size_t expected_weight_bytes(const Checkpoint& ck, const ModelConfig& c) {
  size_t n = f32_bytes(ck.embed_tokens) + f32_bytes(ck.norm) + (c.tie_word_embeddings ? 0 : f32_bytes(ck.lm_head));
  for (const LayerTensors& l : ck.layers)
    for (const HostTensor* t : {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias,
                                &l.q_norm, &l.k_norm, &l.o_proj, &l.o_bias, &l.post_attention_layernorm,
                                &l.pre_feedforward_layernorm, &l.post_feedforward_layernorm, &l.gate_proj, &l.up_proj,
                                &l.down_proj, &l.moe.router, &l.moe.shared_gate_proj, &l.moe.shared_up_proj,
                                &l.moe.shared_down_proj, &l.moe.shared_expert_gate})
      n += f32_bytes(*t);
  for (const LayerTensors& l : ck.layers)
    for (const auto* experts : {&l.moe.gate, &l.moe.up, &l.moe.down})
      for (const HostTensor& t : *experts) n += f32_bytes(t);
  return n;
}

// One eager EXTEND step of `n` tokens on `model`; returns the float32 logits of its last token.
std::vector<float> last_token_logits(CpuBackend& be, LlamaModel& model, int n) {
  const ModelConfig& c = model.config();
  KvPoolShape shape{c.n_layers, c.n_kv_heads, c.head_dim, 1 + 64, 1, 64, DType::f32};
  KvPool kv(be, shape);
  std::vector<int32_t> slots(64);
  for (int p = 0; p < 64; ++p) slots[size_t(p)] = 1 + p;
  kv.set_slots(0, 0, slots.data(), 64);
  GraphConfig graphs;
  graphs.disable_cuda_graph = true;
  ModelRunner runner(be, model, kv, StepBufferSizes{64, 1, 16}, graphs);
  runner.capture_graphs();
  ForwardBatch fb;
  fb.mode = ForwardMode::extend;
  fb.n_prefill_seqs = 1;
  for (int p = 0; p < n; ++p) {
    fb.input_ids.push_back((p * 7 + 3) % c.vocab_size);
    fb.positions.push_back(p);
    fb.out_cache_loc.push_back(1 + p);
  }
  fb.qo_indptr = {0, n};
  fb.seq_lens = {n};
  fb.req_rows = {0};
  fb.sampling.push_back(SeqSampling{});
  std::vector<int32_t> ids;
  runner.forward_eager(fb, ids);
  return runner.last_logits(1);
}

TEST(ModelRegistry, EveryArchitectureBuildsThroughTheRegistryAndRuns) {
  for (const ModelDefinition& d : model_definitions()) {
    SCOPED_TRACE(d.architecture);
    nlohmann::json cfg = test::tiny_config_json(d.architecture);
    if (d.family == ModelFamily::qwen3) cfg["attention_bias"] = true;  // Qwen3 with the optional q/k/v/o bias
    test::add_tiny_moe_fields(cfg, d.moe);
    if (d.text_config_nested) cfg = {{"architectures", cfg["architectures"]}, {"text_config", cfg}};
    const std::string dir = test::make_temp_dir("registry");
    test::write_config(dir, cfg);
    const ModelConfig c = load_model_config(dir);
    EXPECT_EQ(c.family, d.family);
    EXPECT_EQ(c.moe.style, d.moe);
    test::write_safetensors(dir + "/model.safetensors", test::model_tensors(c, "F32"));
    auto ck = Checkpoint::open(dir, c);
    CpuBackend be;
    std::unique_ptr<LlamaModel> model = create_model(be, c, *ck, DType::f32);
    ASSERT_TRUE(model);
    EXPECT_EQ(model->n_pieces(), c.n_layers + 1);
    EXPECT_EQ(model->weight_bytes(), expected_weight_bytes(*ck, c));
    const std::vector<float> logits = last_token_logits(be, *model, 5);
    ASSERT_EQ(logits.size(), size_t(c.vocab_size));
    std::set<float> distinct;
    for (float v : logits) {
      ASSERT_TRUE(std::isfinite(v));
      distinct.insert(v);
    }
    EXPECT_GT(distinct.size(), size_t(c.vocab_size) / 2) << "the logits depend on the weights";
  }
}

TEST(ModelRegistry, TiedHeadIsCountedOnce) {
  const ModelConfig c = load_model_config(test::stories_dir());
  ASSERT_TRUE(c.tie_word_embeddings);
  auto ck = Checkpoint::open(test::stories_dir(), c);
  CpuBackend be;
  auto model = create_model(be, c, *ck, DType::f32);
  EXPECT_EQ(model->weight_bytes(), expected_weight_bytes(*ck, c)) << "the embedding once, no second head";
}

}  // namespace
}  // namespace seam
