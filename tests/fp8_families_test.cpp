// FP8 checkpoints beyond the Llama layout: a mixture-of-experts model loads FP8 attention
// linears beside float experts, an FP8 expert is dequantized at load (tests/fp8_moe_test.cpp
// has every format on the tiny MoE models; tests/fp8_phi_test.cpp the fused Phi-3 / Phi-4
// checkpoints); --quantization fp8 quantizes Phi-3 and Gemma float checkpoints; the CPU
// attention reads an FP8 KV cache inside its sliding-window / soft-cap loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::json;
using test::StTensor;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// E4M3 code 0x38 is 1.0: the weight dequantizes to its scale.
void make_fp8(StTensor& t) {
  t.dtype = "F8_E4M3";
  t.bytes.assign(size_t(test::numel_of(t.shape)), char(0x38));
}

StTensor scalar_scale(const std::string& name, float v) {
  std::string bytes(4, '\0');
  std::memcpy(bytes.data(), &v, 4);
  return {name, "F32", {1}, bytes};
}

// A per-tensor fp8 (dynamic activations) folder of `arch`; `quantize(name)` picks the linear
// weights stored as F8_E4M3, each given a weight_scale.
std::string make_folder(json cfg, const std::function<bool(const std::string&)>& quantize) {
  cfg["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
  const std::string dir = test::make_temp_dir("fp8fam");
  test::write_config(dir, cfg);
  const ModelConfig c = load_model_config(dir);
  std::vector<StTensor> ts = test::model_tensors(c, "F32");
  std::vector<StTensor> scales;
  for (StTensor& t : ts) {
    if (!quantize(t.name)) continue;
    make_fp8(t);
    scales.push_back(scalar_scale(t.name.substr(0, t.name.size() - 7) + ".weight_scale", 0.5f));
  }
  ts.insert(ts.end(), scales.begin(), scales.end());
  test::write_safetensors(dir + "/model.safetensors", ts);
  return dir;
}

bool is_dense_linear(const std::string& n) {
  return contains(n, "_proj.weight") && !contains(n, "experts.") && !contains(n, "shared_expert");
}

TEST(Fp8Families, MoeModelLoadsFp8AttentionBesideFloatExperts) {
  json cfg = test::tiny_config_json("Qwen2MoeForCausalLM");
  test::add_tiny_moe_fields(cfg, MoeStyle::qwen2);
  const std::string dir = make_folder(cfg, is_dense_linear);
  const ModelConfig c = load_model_config(dir);
  auto ck = Checkpoint::open(dir, c);
  // Layer 0 is sparse (no dense MLP), layer 1 dense (mlp_only_layers): both attention blocks
  // and layer 1's MLP are FP8 with their scales; the experts stay float.
  ASSERT_TRUE(ck->layers[0].moe.defined());
  EXPECT_EQ(ck->layers[0].q_proj.dtype, DType::fp8_e4m3);
  EXPECT_EQ(ck->layers[0].moe.gate[0].dtype, DType::f32);
  EXPECT_EQ(ck->fp8_scales.count("model.layers.0.self_attn.q_proj.weight"), 1u);
  EXPECT_EQ(ck->fp8_scales.count("model.layers.1.mlp.down_proj.weight"), 1u);
  EXPECT_EQ(ck->fp8_scales.count("model.layers.0.mlp.experts.0.gate_proj.weight"), 0u);
  CpuBackend be;
  LlamaModel m(be, c, *ck, DType::f32);
  std::filesystem::remove_all(dir);
}

// One expert stored F8_E4M3 (per-tensor scale 0.5, every code 1.0) beside float experts: it is
// dequantized at load into the experts' float weight (0.5 everywhere in its rows), the others
// are uploaded as they are stored.
TEST(Fp8Families, Fp8ExpertIsDequantizedBesideFloatExperts) {
  json cfg = test::tiny_config_json("Qwen2MoeForCausalLM");
  test::add_tiny_moe_fields(cfg, MoeStyle::qwen2);
  const std::string up2 = "model.layers.0.mlp.experts.2.up_proj.weight";
  const std::string dir = make_folder(cfg, [&](const std::string& n) { return is_dense_linear(n) || n == up2; });
  const ModelConfig c = load_model_config(dir);
  auto ck = Checkpoint::open(dir, c);
  ASSERT_EQ(ck->layers[0].moe.up[2].dtype, DType::fp8_e4m3);
  EXPECT_EQ(ck->fp8_scales.count(up2), 1u);
  const HostTensor up1 = ck->layers[0].moe.up[1];
  ASSERT_EQ(up1.dtype, DType::f32);
  CpuBackend be;
  LlamaModel m(be, c, *ck, DType::f32);
  const Tensor w = m.layer_moe(0)->w_gate_up();  // [n_experts, 2 * inter, hidden]
  const int64_t inter = c.moe.expert_intermediate_size, hidden = c.hidden_size;
  const float* p = static_cast<const float*>(w.data);
  auto at = [&](int64_t e, int64_t row, int64_t k) { return p[(e * 2 * inter + row) * hidden + k]; };
  const float* up1_values = static_cast<const float*>(up1.data);
  for (int64_t r = 0; r < inter; ++r)
    for (int64_t k = 0; k < hidden; ++k) {
      ASSERT_EQ(at(2, inter + r, k), 0.5f) << r << " " << k;                         // expert 2's up rows
      ASSERT_EQ(at(1, inter + r, k), up1_values[r * hidden + k]) << r << " " << k;  // expert 1's, as stored
    }
  std::filesystem::remove_all(dir);
}

TEST(Fp8Families, OnlineFp8QuantizesPhi3AndGemmaFloatCheckpoints) {
  for (const char* arch : {"Phi3ForCausalLM", "Gemma2ForCausalLM"}) {
    SCOPED_TRACE(arch);
    const std::string dir = test::make_temp_dir("fp8fam");
    test::write_config(dir, test::tiny_config_json(arch));
    ModelConfig c = load_model_config(dir);
    test::write_safetensors(dir + "/model.safetensors", test::model_tensors(c, "F32"));
    CpuBackend be;
    auto dense_ck = Checkpoint::open(dir, c);
    LlamaModel dense(be, c, *dense_ck, DType::f32);
    apply_quantization_flag(c.quant, "fp8");
    auto ck = Checkpoint::open(dir, c);
    LlamaModel m(be, c, *ck, DType::f32);
    // The decoder's linears are stored as one-byte codes (plus a float scale per row).
    EXPECT_LT(m.weight_bytes(), dense.weight_bytes());
    std::filesystem::remove_all(dir);
  }
}

// A sliding-window, soft-capped attention over an FP8 cache equals the same attention over a
// float cache holding the decoded E4M3 values, bit for bit; keys outside the window are NaN
// codes (0x7F) and must not be read.
TEST(Fp8Families, CpuAttentionReadsFp8KvInsideTheWindow) {
  const int64_t heads = 4, kv = 2, d = 8, n_slots = 12;
  const int n_new = 5, seq_len = 10, window = 3;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> q(size_t(n_new * heads * d)), kf(size_t(n_slots * kv * d)), vf(kf.size());
  for (float& x : q) x = u(rng);
  std::vector<uint8_t> k8(kf.size()), v8(kf.size());
  for (size_t i = 0; i < kf.size(); ++i) kf[i] = u(rng), vf[i] = u(rng);
  convert_from_f32(kf.data(), DType::fp8_e4m3, k8.data(), kf.size());
  convert_from_f32(vf.data(), DType::fp8_e4m3, v8.data(), vf.size());
  convert_to_f32(k8.data(), DType::fp8_e4m3, kf.data(), kf.size());  // the float cache holds the E4M3 values
  convert_to_f32(v8.data(), DType::fp8_e4m3, vf.data(), vf.size());
  // Slot p holds position p; the first query (position 5) sees keys 3.. only.
  const int first_needed = seq_len - n_new - window + 1;
  for (int p = 0; p < first_needed; ++p)
    for (int64_t e = 0; e < kv * d; ++e) {
      const size_t i = size_t(p * kv * d + e);
      k8[i] = v8[i] = 0x7F;
      kf[i] = vf[i] = NAN;
    }
  std::vector<int32_t> qo = {0, n_new}, lens = {seq_len}, rows = {0};
  std::vector<int32_t> pt(static_cast<size_t>(n_slots));
  for (int i = 0; i < n_slots; ++i) pt[size_t(i)] = i;
  AttentionBatch b;
  b.n_tokens = n_new;
  b.n_seqs = 1;
  b.n_prefill_seqs = 1;
  b.n_prefill_tokens = n_new;
  b.max_seq_len = seq_len;
  b.qo_indptr = Tensor(qo.data(), DType::i32, Device::cpu, {2});
  b.seq_lens = Tensor(lens.data(), DType::i32, Device::cpu, {1});
  b.req_rows = Tensor(rows.data(), DType::i32, Device::cpu, {1});
  b.page_table = Tensor(pt.data(), DType::i32, Device::cpu, {1, n_slots});
  AttentionOptions o;
  o.scale = 0.35f;
  o.sliding_window = window;
  o.logit_softcap = 4.f;
  CpuBackend be;
  std::vector<float> out8(q.size()), outf(q.size());
  const Tensor qt(q.data(), DType::f32, Device::cpu, {n_new, heads, d});
  be.attention(Tensor(out8.data(), DType::f32, Device::cpu, {n_new, heads, d}), qt,
               Tensor(k8.data(), DType::fp8_e4m3, Device::cpu, {n_slots, kv, d}),
               Tensor(v8.data(), DType::fp8_e4m3, Device::cpu, {n_slots, kv, d}), b, o);
  be.attention(Tensor(outf.data(), DType::f32, Device::cpu, {n_new, heads, d}), qt,
               Tensor(kf.data(), DType::f32, Device::cpu, {n_slots, kv, d}),
               Tensor(vf.data(), DType::f32, Device::cpu, {n_slots, kv, d}), b, o);
  be.synchronize();
  for (size_t i = 0; i < out8.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out8[i])) << i;
    ASSERT_EQ(out8[i], outf[i]) << i;
  }
}

}  // namespace
}  // namespace seam
