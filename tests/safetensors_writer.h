// Test helper (header-only): writes safetensors files and small model folders
// so the loader tests can build valid checkpoints and then break them one way at a time.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace seam::test {

struct StTensor {
  std::string name;
  std::string dtype;  // safetensors spelling: "F32", "F16", "BF16", "I8", ...
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian data
};

// The deterministic value of element i of a tensor with this seed, before rounding.
inline float test_value(int64_t i, int seed) { return 0.5f * std::sin(0.37f * float(i) + 1.3f * float(seed)); }

// The value element i holds once stored as `dtype` (rounded for F16/BF16).
inline float stored_value(int64_t i, int seed, const std::string& dtype) {
  float v = test_value(i, seed);
  if (dtype == "F16") return f16_to_f32(f32_to_f16(v));
  if (dtype == "BF16") return bf16_to_f32(f32_to_bf16(v));
  return v;
}

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// A tensor filled with test_value(i, seed) in F32/F16/BF16 (I8: the low byte of i).
inline StTensor make_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                            int seed) {
  StTensor t{name, dtype, std::move(shape), {}};
  const int64_t n = numel_of(t.shape);
  for (int64_t i = 0; i < n; ++i) {
    float v = test_value(i, seed);
    if (dtype == "F32") {
      t.bytes.append(reinterpret_cast<const char*>(&v), 4);
    } else if (dtype == "F16" || dtype == "BF16") {
      uint16_t h = dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
      t.bytes.append(reinterpret_cast<const char*>(&h), 2);
    } else {
      t.bytes.push_back(char(i));
    }
  }
  return t;
}

// The file image: u64 LE header length, header JSON (spaces pad it to 8 bytes), data.
inline std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string h = header;
  while (h.size() % 8) h.push_back(' ');
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + h + data;
}

inline nlohmann::json safetensors_header(const std::vector<StTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  return h;
}

inline std::string safetensors_bytes(const std::vector<StTensor>& tensors) {
  std::string data;
  for (const auto& t : tensors) data += t.bytes;
  return raw_safetensors(safetensors_header(tensors).dump(), data);
}

inline void write_safetensors(const std::string& path, const std::vector<StTensor>& tensors) {
  write_file(path, safetensors_bytes(tensors));
}

// A small config.json of `arch` (hidden 16, 4 heads of 4, 2 KV heads, 2 layers).
inline nlohmann::json tiny_config_json(const std::string& arch = "LlamaForCausalLM") {
  return {{"architectures", {arch}},
          {"hidden_size", 16},
          {"intermediate_size", 24},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 32},
          {"max_position_embeddings", 64},
          {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"tie_word_embeddings", false},
          {"torch_dtype", "float32"},
          {"bos_token_id", 1},
          {"eos_token_id", 2}};
}

// The mixture-of-experts fields of a tiny `style` config (4 experts of width 8, top-2; Qwen:
// layer 1 dense, renormalised; Qwen2-MoE: a shared expert of width 12). Adds nothing for none.
inline void add_tiny_moe_fields(nlohmann::json& cfg, MoeStyle style) {
  if (style == MoeStyle::none) return;
  cfg[style == MoeStyle::qwen2 ? "num_experts" : "num_local_experts"] = 4;
  cfg["num_experts_per_tok"] = 2;
  if (style == MoeStyle::mixtral) return;
  cfg["moe_intermediate_size"] = 8;
  cfg["norm_topk_prob"] = true;
  cfg["mlp_only_layers"] = {1};
  if (style == MoeStyle::qwen2) cfg["shared_expert_intermediate_size"] = 12;
}

inline void write_config(const std::string& dir, const nlohmann::json& config) {
  write_file(dir + "/config.json", config.dump(2));
}

// Every tensor `c` needs, with HF names and shapes, each with its own seed
// (its position in the list), stored as `dtype`.
inline std::vector<StTensor> model_tensors(const ModelConfig& c, const std::string& dtype) {
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size, vocab = c.vocab_size;
  const int64_t q = c.q_size(), kv = c.kv_size(), hd = c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> specs;
  // A multimodal checkpoint's text model sits under model.language_model. (transformers 5).
  const std::string base = c.text_of_multimodal ? "model.language_model." : "model.";
  specs.push_back({base + "embed_tokens.weight", {vocab, hidden}});
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = base + "layers." + std::to_string(i) + ".";
    specs.push_back({p + "input_layernorm.weight", {hidden}});
    const bool fused = c.family == ModelFamily::phi3;  // Phi-3's fused qkv_proj and gate_up_proj
    if (fused) {
      specs.push_back({p + "self_attn.qkv_proj.weight", {q + 2 * kv, hidden}});
    } else {
      specs.push_back({p + "self_attn.q_proj.weight", {q, hidden}});
      specs.push_back({p + "self_attn.k_proj.weight", {kv, hidden}});
      specs.push_back({p + "self_attn.v_proj.weight", {kv, hidden}});
    }
    if (c.attention_bias) {
      specs.push_back({p + "self_attn.q_proj.bias", {q}});
      specs.push_back({p + "self_attn.k_proj.bias", {kv}});
      specs.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    if (c.qk_norm) {
      specs.push_back({p + "self_attn.q_norm.weight", {hd}});
      specs.push_back({p + "self_attn.k_norm.weight", {hd}});
    }
    specs.push_back({p + "self_attn.o_proj.weight", {hidden, q}});
    if (c.o_proj_bias) specs.push_back({p + "self_attn.o_proj.bias", {hidden}});
    specs.push_back({p + "post_attention_layernorm.weight", {hidden}});
    if (c.gemma_norms) {
      specs.push_back({p + "pre_feedforward_layernorm.weight", {hidden}});
      specs.push_back({p + "post_feedforward_layernorm.weight", {hidden}});
    }
    if (c.moe.is_sparse_layer(i)) {
      // A mixture-of-experts layer: router, experts, and Qwen2-MoE's shared expert.
      const bool mixtral = c.moe.style == MoeStyle::mixtral;
      const std::string b = p + (mixtral ? "block_sparse_moe." : "mlp.");
      const int64_t n_experts = c.moe.n_experts, ei = c.moe.expert_intermediate_size;
      specs.push_back({b + "gate.weight", {n_experts, hidden}});
      for (int64_t e = 0; e < n_experts; ++e) {
        const std::string x = b + "experts." + std::to_string(e) + ".";
        specs.push_back({x + (mixtral ? "w1" : "gate_proj") + ".weight", {ei, hidden}});
        specs.push_back({x + (mixtral ? "w3" : "up_proj") + ".weight", {ei, hidden}});
        specs.push_back({x + (mixtral ? "w2" : "down_proj") + ".weight", {hidden, ei}});
      }
      if (c.moe.has_shared_expert()) {
        const int64_t si = c.moe.shared_expert_intermediate_size;
        specs.push_back({b + "shared_expert.gate_proj.weight", {si, hidden}});
        specs.push_back({b + "shared_expert.up_proj.weight", {si, hidden}});
        specs.push_back({b + "shared_expert.down_proj.weight", {hidden, si}});
        specs.push_back({b + "shared_expert_gate.weight", {1, hidden}});
      }
      continue;
    }
    if (fused) {
      specs.push_back({p + "mlp.gate_up_proj.weight", {2 * inter, hidden}});
    } else {
      specs.push_back({p + "mlp.gate_proj.weight", {inter, hidden}});
      specs.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
    }
    specs.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
  }
  specs.push_back({base + "norm.weight", {hidden}});
  if (!c.tie_word_embeddings) specs.push_back({"lm_head.weight", {vocab, hidden}});
  std::vector<StTensor> out;
  for (size_t i = 0; i < specs.size(); ++i) out.push_back(make_tensor(specs[i].first, dtype, specs[i].second, int(i)));
  return out;
}

// The seed model_tensors gave `name` (its index), or -1.
inline int seed_of(const std::vector<StTensor>& tensors, const std::string& name) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return int(i);
  return -1;
}

// The tensors of `dir`/model.safetensors as StTensors (bytes copied: the mapping is closed).
inline std::vector<StTensor> read_model_tensors(const std::string& dir) {
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<StTensor> ts;
  for (const auto& name : f->tensor_names()) {
    HostTensor t = f->tensor(name);
    const char* d = t.dtype == DType::f32 ? "F32" : t.dtype == DType::bf16 ? "BF16" : t.dtype == DType::f16 ? "F16" : "F8_E4M3";
    ts.push_back({name, d, t.shape, std::string(static_cast<const char*>(t.data), size_t(t.numel()) * dtype_size(t.dtype))});
  }
  return ts;
}

// Rewrites `dir`/model.safetensors through `edit` on its tensor list.
inline void edit_model_tensors(const std::string& dir, const std::function<void(std::vector<StTensor>&)>& edit) {
  std::vector<StTensor> ts = read_model_tensors(dir);
  edit(ts);
  write_safetensors(dir + "/model.safetensors", ts);
}

// The error Checkpoint::open raises on `dir` (its config loaded first), or "" when it loads.
inline std::string checkpoint_open_error(const std::string& dir) {
  try {
    const ModelConfig c = load_model_config(dir);
    Checkpoint::open(dir, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace seam::test
