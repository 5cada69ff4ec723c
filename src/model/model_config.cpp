// load_model_config: config.json (+ optional generation_config.json) -> ModelConfig.
//
// Every field seam relies on is read explicitly and validated; anything that would
// make seam compute a different model than Hugging Face transformers (an unknown
// architecture, an unsupported RoPE scaling, an activation the family does not use, MLP
// biases, a Gemma-only field on another family) is rejected with a message naming the file
// and the field, never ignored. Both transformers layouts are read (rope_config.h).
#include "model/model_config.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "model/config_json.h"
#include "model/json_file.h"
#include "model/model_registry.h"

namespace seam {
namespace {

using nlohmann::json;
using namespace config_json;

constexpr const char* kConfig = "config.json";
constexpr const char* kGenConfig = "generation_config.json";

// The registry decides which architectures exist and the family rules applied below.
const ModelDefinition& read_architecture(const json& j, ModelConfig& c) {
  const json* v = find_field(j, "architectures");
  SEAM_CHECK(v, kConfig, ": missing field 'architectures'");
  SEAM_CHECK(v->is_array() && !v->empty() && (*v)[0].is_string(), kConfig,
             ": field 'architectures' must be a non-empty list of strings");
  c.architecture = (*v)[0].get<std::string>();
  const ModelDefinition* d = find_model_definition(c.architecture);
  SEAM_CHECK(d, kConfig, ": unknown architecture '", c.architecture, "' (supported: ", supported_architectures(),
             ")");
  c.family = d->family;
  return *d;
}

DType parse_torch_dtype(const json& j) {
  // transformers 5 writes "dtype"; older versions "torch_dtype".
  const char* key = find_field(j, "dtype") ? "dtype" : "torch_dtype";
  std::string s = optional_string(j, kConfig, key, "float32");
  if (s == "float32") return DType::f32;
  if (s == "float16") return DType::f16;
  if (s == "bfloat16") return DType::bf16;
  throw Error(detail::concat(kConfig, ": field '", key, "' is '", s,
                             "' (supported: float32, float16, bfloat16)"));
}

// RoPE: rope_theta at the top level (transformers 4) and/or inside rope_parameters
// (transformers 5), scaling in rope_scaling or rope_parameters. Gemma 3 has two: transformers 5
// nests one dict per layer type; transformers 4 gives the global one (rope_theta, rope_scaling)
// and the sliding layers' base (rope_local_base_freq, unscaled).
void read_rope(const json& j, const ModelDefinition& d, ModelConfig& c) {
  const json* rope = nullptr;
  std::string rope_key;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const json* v = find_field(j, key);
    if (!v || rope) continue;
    SEAM_CHECK(v->is_object(), kConfig, ": field '", key, "' must be an object or null, got ",
               json_type_name(*v));
    rope = v;
    rope_key = key;
  }
  // partial_rotary_factor: Phi-3's class rotates the first head_dim * factor dims only.
  double partial = optional_number(j, kConfig, "partial_rotary_factor", 1.0);
  if (rope) {
    if (const json* v = find_field(*rope, "partial_rotary_factor")) {
      double p = as_number(*v, kConfig, rope_key + ".partial_rotary_factor");
      SEAM_CHECK(!find_field(j, "partial_rotary_factor") || p == partial, kConfig,
                 ": 'partial_rotary_factor' and '", rope_key, ".partial_rotary_factor' disagree");
      partial = p;
    }
  }
  SEAM_CHECK(partial > 0 && partial <= 1, kConfig, ": field 'partial_rotary_factor' must be in (0, 1], got ",
             partial);
  SEAM_CHECK(partial == 1 || d.family == ModelFamily::phi3, kConfig, ": field 'partial_rotary_factor' (", partial,
             ") is not supported for ", c.architecture, " (only Phi3ForCausalLM rotates part of a head)");
  c.rotary_dim = int(c.head_dim * partial);  // transformers: int(head_dim * partial_rotary_factor)
  SEAM_CHECK(c.rotary_dim >= 2 && c.rotary_dim % 2 == 0, kConfig, ": head_dim ", c.head_dim,
             " * partial_rotary_factor ", partial, " = ", c.rotary_dim, " rotary dims (must be even and positive)");

  RopeContext ctx{&j, c.rotary_dim, c.max_position_embeddings};
  const bool per_type = rope && !rope->empty() && rope->begin()->is_object();
  const bool gemma3 = d.family == ModelFamily::gemma3;
  if (per_type) {
    SEAM_CHECK(gemma3, kConfig, ": '", rope_key, "' per layer type is not supported for ", c.architecture);
    for (const auto& [k, v] : rope->items()) {
      SEAM_CHECK(v.is_object() && (k == "full_attention" || k == "sliding_attention"), kConfig, ": '", rope_key, ".",
                 k, "' is not a layer type seam knows (full_attention, sliding_attention)");
    }
    SEAM_CHECK(!find_field(j, "rope_local_base_freq"), kConfig,
               ": both 'rope_local_base_freq' and a per-layer-type '", rope_key, "' are given");
    const json* full = find_field(*rope, "full_attention");
    const json* local = find_field(*rope, "sliding_attention");
    RopeConfig g = read_rope_config(full, rope_key + ".full_attention", ctx, "", 10000.0);
    c.rope_theta = g.theta;
    c.rope_scaling = g.scaling;
    c.rope_local = read_rope_config(local, rope_key + ".sliding_attention", ctx, "", 10000.0);
  } else {
    RopeConfig g = read_rope_config(rope, rope_key, ctx, "rope_theta", 10000.0);
    c.rope_theta = g.theta;
    c.rope_scaling = g.scaling;
    c.rope_local = g;
    if (gemma3) {
      // Gemma3TextConfig's default rope_local_base_freq is 10000; the local layers are unscaled.
      c.rope_local = RopeConfig{optional_number(j, kConfig, "rope_local_base_freq", 10000.0), RopeScaling{}};
      SEAM_CHECK(c.rope_local.theta > 0, kConfig, ": field 'rope_local_base_freq' must be positive");
    } else {
      SEAM_CHECK(!find_field(j, "rope_local_base_freq"), kConfig, ": field 'rope_local_base_freq' is not used by ",
                 c.architecture, " (only Gemma 3 has a local RoPE base)");
    }
  }
  SEAM_CHECK(c.rope_local.scaling.type != RopeType::longrope || c.rope_scaling.type == RopeType::longrope, kConfig,
             ": longrope on sliding layers only is not supported");
}

// eos_token_id may be a number or a list of numbers (stories260K: [1, 2]).
std::vector<int32_t> read_ids(const json& v, const char* file, const char* key) {
  std::vector<int32_t> ids;
  auto add = [&](const json& x) {
    int64_t id = as_int(x, file, key);
    SEAM_CHECK(id >= 0 && id <= INT32_MAX, file, ": field '", key, "' has a negative id ", id);
    ids.push_back(int32_t(id));
  };
  if (v.is_array()) {
    for (const auto& x : v) add(x);
  } else {
    add(v);
  }
  return ids;
}

void read_special_ids(const json& config, const json* gen, ModelConfig& c) {
  const json* eos_src = gen && find_field(*gen, "eos_token_id") ? gen : &config;
  const char* eos_file = eos_src == gen ? kGenConfig : kConfig;
  if (const json* v = find_field(*eos_src, "eos_token_id")) c.eos_token_ids = read_ids(*v, eos_file, "eos_token_id");

  const json* bos_src = gen && find_field(*gen, "bos_token_id") ? gen : &config;
  const char* bos_file = bos_src == gen ? kGenConfig : kConfig;
  if (const json* v = find_field(*bos_src, "bos_token_id")) {
    auto ids = read_ids(*v, bos_file, "bos_token_id");
    SEAM_CHECK(ids.size() == 1, bos_file, ": field 'bos_token_id' must be one id");
    c.bos_token_id = ids[0];
  }

  for (int32_t id : c.eos_token_ids)
    SEAM_CHECK(id < c.vocab_size, eos_file, ": eos_token_id ", id, " is not below vocab_size ", c.vocab_size);
  SEAM_CHECK(c.bos_token_id < c.vocab_size, bos_file, ": bos_token_id ", c.bos_token_id,
             " is not below vocab_size ", c.vocab_size);
}

void read_attention_flags(const json& j, const ModelDefinition& d, ModelConfig& c) {
  if (d.attention_bias == AttentionBiasRule::qkv_from_qkv_bias) {
    // Qwen2-MoE (transformers 5): config.json qkv_bias (default true) on q/k/v; o_proj never.
    c.attention_bias = optional_bool(j, kConfig, "qkv_bias", true);
    c.o_proj_bias = false;
  } else if (d.attention_bias == AttentionBiasRule::qkv_always) {
    // Qwen2 always has q/k/v biases and never an o_proj bias; its config has no key for it.
    c.attention_bias = true;
    c.o_proj_bias = false;
  } else {
    // Llama/Mistral/Qwen3: attention_bias puts a bias on q, k, v *and* o_proj.
    bool bias = optional_bool(j, kConfig, "attention_bias", false);
    c.attention_bias = bias;
    c.o_proj_bias = bias;
  }
  c.qk_norm = d.qk_norm;
  SEAM_CHECK(!optional_bool(j, kConfig, "mlp_bias", false), kConfig,
             ": field 'mlp_bias' is true; MLP biases are not supported");
}

// The window of every layer, as transformers' layer_types (given in transformers 5 configs,
// derived from the family's rule in transformers 4 ones).
void read_sliding_window(const json& j, const ModelDefinition& d, ModelConfig& c) {
  const SlidingWindowRule rule = d.sliding_window;
  if (rule == SlidingWindowRule::none) return;  // LlamaConfig has no window: transformers ignores the key
  if (rule == SlidingWindowRule::opt_in && !optional_bool(j, kConfig, "use_sliding_window", false)) return;
  // Gemma2Config and Gemma3TextConfig default to a 4096 window when the key is missing; null
  // means no window.
  const bool gemma_rule = rule == SlidingWindowRule::alternating || rule == SlidingWindowRule::pattern;
  const int window = gemma_rule && !j.contains("sliding_window") ? 4096 : optional_int(j, kConfig, "sliding_window", 0);
  if (window == 0 && !gemma_rule) return;  // Gemma's layer types still pick the RoPE table
  std::vector<bool> sliding(size_t(c.n_layers), false);
  if (const json* types = find_field(j, "layer_types")) {
    SEAM_CHECK(types->is_array() && int(types->size()) == c.n_layers, kConfig,
               ": field 'layer_types' must list num_hidden_layers (", c.n_layers, ") layer types");
    for (int i = 0; i < c.n_layers; ++i) {
      const json& t = (*types)[size_t(i)];
      const std::string name = t.is_string() ? t.get<std::string>() : t.dump();
      SEAM_CHECK(name == "full_attention" || name == "sliding_attention", kConfig, ": layer_types[", i, "] is '",
                 name, "' (supported: full_attention, sliding_attention)");
      sliding[size_t(i)] = name == "sliding_attention";
    }
  } else if (rule == SlidingWindowRule::always) {
    sliding.assign(sliding.size(), true);
  } else if (rule == SlidingWindowRule::opt_in) {
    const int first = optional_int(j, kConfig, "max_window_layers", 28);  // Qwen2Config's default
    for (int i = first; i < c.n_layers; ++i) sliding[size_t(i)] = true;
  } else if (rule == SlidingWindowRule::alternating) {
    for (int i = 0; i < c.n_layers; i += 2) sliding[size_t(i)] = true;
  } else {  // pattern: Gemma 3's five local layers to one global
    const char* key = find_field(j, "sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    const int pattern = optional_int(j, kConfig, key, 6);
    for (int i = 0; i < c.n_layers; ++i) sliding[size_t(i)] = (i + 1) % pattern != 0;
  }
  bool any = false;
  for (bool s : sliding) any = any || s;
  if (!any) return;
  c.sliding_layers = sliding;
  if (window == 0) return;
  c.sliding_window = window;
  c.layer_windows.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) c.layer_windows[size_t(i)] = sliding[size_t(i)] ? window : 0;
}

// A soft-cap: `fallback` when the key is missing (Gemma2Config's defaults are 50 and 30), 0
// (off) when it is null. Families without soft-capping reject a non-null value.
float read_softcap(const json& j, const ModelDefinition& d, const char* key, float fallback) {
  const bool has = d.family == ModelFamily::gemma2 || d.family == ModelFamily::gemma3;
  auto it = j.find(key);
  if (it == j.end()) return has ? fallback : 0.f;
  if (it->is_null()) return 0.f;
  SEAM_CHECK(has, kConfig, ": field '", key, "' is not supported for ", d.architecture,
             " (transformers' class has no soft-capping)");
  double cap = as_number(*it, kConfig, key);
  SEAM_CHECK(std::isfinite(cap) && cap > 0, kConfig, ": field '", key, "' must be positive or null, got ", cap);
  return float(cap);
}

// Gemma's differences from Llama that config.json states; the fixed ones ((1 + w) norms,
// sandwich norms, the scaled embedding) follow from the family.
void read_family_fields(const json& j, const ModelDefinition& d, ModelConfig& c) {
  const bool gemma = d.family == ModelFamily::gemma2 || d.family == ModelFamily::gemma3;
  c.gemma_norms = gemma;
  c.attn_logit_softcap = read_softcap(j, d, "attn_logit_softcapping", 50.f);
  c.final_logit_softcap = read_softcap(j, d, "final_logit_softcapping", d.family == ModelFamily::gemma2 ? 30.f : 0.f);
  if (gemma) {
    // Gemma's MLP uses hidden_activation (hidden_act is an unused legacy key there).
    const std::string act = optional_string(j, kConfig, "hidden_activation", "gelu_pytorch_tanh");
    SEAM_CHECK(act == "gelu_pytorch_tanh", kConfig, ": field 'hidden_activation' is '", act,
               "' (supported: gelu_pytorch_tanh)");
    c.hidden_act = MlpActivation::gelu_tanh;
    const double scalar = optional_number(j, kConfig, "query_pre_attn_scalar", 256.0);
    SEAM_CHECK(std::isfinite(scalar) && scalar > 0, kConfig, ": field 'query_pre_attn_scalar' must be positive");
    c.query_pre_attn_scalar = float(scalar);
    SEAM_CHECK(!optional_bool(j, kConfig, "use_bidirectional_attention", false), kConfig,
               ": field 'use_bidirectional_attention' is true; only causal attention is supported");
  } else {
    const std::string act = optional_string(j, kConfig, "hidden_act", "silu");
    SEAM_CHECK(act == "silu", kConfig, ": field 'hidden_act' is '", act, "' (supported: silu)");
    SEAM_CHECK(!find_field(j, "query_pre_attn_scalar"), kConfig, ": field 'query_pre_attn_scalar' is not used by ",
               d.architecture, " (only Gemma scales attention by it)");
  }
}

}  // namespace

ModelConfig load_model_config(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  SEAM_CHECK(fs::is_directory(dir, ec), dir, ": model folder not found");
  const json top = read_json_file((fs::path(dir) / kConfig).string(), kConfig);
  SEAM_CHECK(top.is_object(), kConfig, ": expected a JSON object at the top level");

  ModelConfig c;
  const ModelDefinition& definition = read_architecture(top, c);
  // A multimodal checkpoint: seam serves its text model, described by text_config.
  c.text_of_multimodal = definition.text_config_nested;
  if (c.text_of_multimodal) {
    const json* t = find_field(top, "text_config");
    SEAM_CHECK(t && t->is_object(), kConfig, ": missing field 'text_config' (required by ", c.architecture, ")");
  }
  const json& j = c.text_of_multimodal ? top["text_config"] : top;
  c.hidden_size = required_int(j, kConfig, "hidden_size");
  c.intermediate_size = required_int(j, kConfig, "intermediate_size");
  c.n_layers = required_int(j, kConfig, "num_hidden_layers");
  c.n_heads = required_int(j, kConfig, "num_attention_heads");
  c.n_kv_heads = optional_int(j, kConfig, "num_key_value_heads", c.n_heads);
  c.vocab_size = required_int(j, kConfig, "vocab_size");
  c.max_position_embeddings = required_int(j, kConfig, "max_position_embeddings");
  if (!find_field(j, "head_dim")) {
    SEAM_CHECK(c.hidden_size % c.n_heads == 0, kConfig, ": hidden_size ", c.hidden_size,
               " is not divisible by num_attention_heads ", c.n_heads, " (and no head_dim is given)");
  }
  c.head_dim = optional_int(j, kConfig, "head_dim", c.hidden_size / c.n_heads);
  SEAM_CHECK(c.n_heads % c.n_kv_heads == 0, kConfig, ": num_attention_heads ", c.n_heads,
             " is not divisible by num_key_value_heads ", c.n_kv_heads);
  SEAM_CHECK(c.head_dim % 2 == 0, kConfig, ": head_dim ", c.head_dim, " must be even (rotary pairs)");

  double eps = optional_number(j, kConfig, "rms_norm_eps", 1e-6);
  SEAM_CHECK(std::isfinite(eps) && eps > 0, kConfig, ": field 'rms_norm_eps' must be positive, got ", eps);
  c.rms_norm_eps = float(eps);
  read_family_fields(j, definition, c);
  // Gemma ties its head by default (the configs often omit the key); the others do not.
  const bool tie_default = c.gemma_norms;
  c.tie_word_embeddings = optional_bool(j, kConfig, "tie_word_embeddings",
                                        optional_bool(top, kConfig, "tie_word_embeddings", tie_default));
  c.torch_dtype = parse_torch_dtype(find_field(top, "dtype") || find_field(top, "torch_dtype") ? top : j);
  c.quant = load_quant_config(dir);
  read_rope(j, definition, c);
  read_attention_flags(j, definition, c);
  read_sliding_window(j, definition, c);
  read_moe_config(j, definition.moe, c);

  // generation_config.json is optional, but a present one must be valid.
  json gen;
  const fs::path gen_path = fs::path(dir) / kGenConfig;
  bool has_gen = fs::exists(gen_path, ec);
  if (has_gen) {
    gen = read_json_file(gen_path.string(), kGenConfig);
    SEAM_CHECK(gen.is_object(), kGenConfig, ": expected a JSON object at the top level");
  }
  read_special_ids(j, has_gen ? &gen : nullptr, c);
  return c;
}

std::vector<float> rope_inv_freq(const ModelConfig& c) { return rope_inv_freq(c.rope_global(), c.rotary_dim); }

}  // namespace seam
