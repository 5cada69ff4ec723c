// load_model_config: config.json (+ optional generation_config.json) -> ModelConfig.
//
// Every field seam relies on is read explicitly and validated; anything that would
// make seam compute a different model than Hugging Face transformers (an unknown
// architecture, an unsupported RoPE scaling, a non-SiLU activation, MLP biases)
// is rejected with a message naming the file and the field, never ignored.
#include "model/model_config.h"

#include <cmath>
#include <filesystem>
#include <numbers>

#include "core/error.h"
#include "model/json_file.h"
#include "model/model_registry.h"

namespace seam {
namespace {

using nlohmann::json;

constexpr const char* kConfig = "config.json";
constexpr const char* kGenConfig = "generation_config.json";

// A field is absent when the key is missing or its value is null (HF writes
// "head_dim": null, "rope_scaling": null for "use the default").
const json* find_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const json& v, const char* file, const std::string& key) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    // Some exporters write 4096.0; accept integral values only.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
    throw Error(detail::concat(file, ": field '", key, "' must be an integer, got ", v.dump()));
  }
  throw Error(detail::concat(file, ": field '", key, "' must be an integer, got ", json_type_name(v)));
}

double as_number(const json& v, const char* file, const std::string& key) {
  SEAM_CHECK(v.is_number(), file, ": field '", key, "' must be a number, got ", json_type_name(v));
  return v.get<double>();
}

int required_int(const json& j, const char* file, const char* key) {
  const json* v = find_field(j, key);
  SEAM_CHECK(v, file, ": missing field '", key, "'");
  int64_t x = as_int(*v, file, key);
  SEAM_CHECK(x > 0 && x <= INT32_MAX, file, ": field '", key, "' must be positive (and fit in int32), got ", x);
  return int(x);
}

int optional_int(const json& j, const char* file, const char* key, int fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  int64_t x = as_int(*v, file, key);
  SEAM_CHECK(x > 0 && x <= INT32_MAX, file, ": field '", key, "' must be positive (and fit in int32), got ", x);
  return int(x);
}

double optional_number(const json& j, const char* file, const char* key, double fallback) {
  const json* v = find_field(j, key);
  return v ? as_number(*v, file, key) : fallback;
}

bool optional_bool(const json& j, const char* file, const char* key, bool fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  SEAM_CHECK(v->is_boolean(), file, ": field '", key, "' must be true or false, got ", json_type_name(*v));
  return v->get<bool>();
}

std::string optional_string(const json& j, const char* file, const char* key, const std::string& fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  SEAM_CHECK(v->is_string(), file, ": field '", key, "' must be a string, got ", json_type_name(*v));
  return v->get<std::string>();
}

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

// RoPE: rope_theta at the top level (transformers 4) and/or inside
// rope_parameters (transformers 5), scaling in rope_scaling or rope_parameters.
void read_rope(const json& j, ModelConfig& c) {
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

  const json* top_theta = find_field(j, "rope_theta");
  const json* nested_theta = rope ? find_field(*rope, "rope_theta") : nullptr;
  double theta = top_theta ? as_number(*top_theta, kConfig, "rope_theta") : 10000.0;
  if (nested_theta) {
    double t = as_number(*nested_theta, kConfig, rope_key + ".rope_theta");
    SEAM_CHECK(!top_theta || t == theta, kConfig, ": 'rope_theta' (", theta, ") and '", rope_key,
               ".rope_theta' (", t, ") disagree");
    theta = t;
  }
  SEAM_CHECK(std::isfinite(theta) && theta > 0, kConfig, ": field 'rope_theta' must be positive, got ", theta);
  c.rope_theta = float(theta);

  if (!rope) return;
  for (const auto& [k, v] : rope->items()) {
    // transformers 5 nests one rope dict per layer type for some models; seam has one RoPE.
    SEAM_CHECK(!v.is_object(), kConfig, ": '", rope_key, ".", k, "' (per-layer-type RoPE) is not supported");
  }
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (const json* v = find_field(*rope, key)) {
      SEAM_CHECK(v->is_string(), kConfig, ": field '", rope_key, ".", key, "' must be a string");
      type = v->get<std::string>();
      break;
    }
  }
  if (type == "default") return;
  SEAM_CHECK(type == "llama3", kConfig, ": ", rope_key, " type '", type,
             "' is not supported (supported: default, llama3)");

  auto need = [&](const char* key) -> const json& {
    const json* v = find_field(*rope, key);
    SEAM_CHECK(v, kConfig, ": missing field '", rope_key, ".", key, "' (required by rope type llama3)");
    return *v;
  };
  RopeScaling& s = c.rope_scaling;
  s.llama3 = true;
  s.factor = float(as_number(need("factor"), kConfig, rope_key + ".factor"));
  s.low_freq_factor = float(as_number(need("low_freq_factor"), kConfig, rope_key + ".low_freq_factor"));
  s.high_freq_factor = float(as_number(need("high_freq_factor"), kConfig, rope_key + ".high_freq_factor"));
  int64_t orig = as_int(need("original_max_position_embeddings"), kConfig,
                        rope_key + ".original_max_position_embeddings");
  SEAM_CHECK(orig > 0 && orig <= INT32_MAX, kConfig, ": field '", rope_key,
             ".original_max_position_embeddings' must be positive, got ", orig);
  s.original_max_position_embeddings = int(orig);
  SEAM_CHECK(s.factor >= 1.f, kConfig, ": field '", rope_key, ".factor' must be >= 1, got ", s.factor);
  SEAM_CHECK(s.low_freq_factor > 0.f, kConfig, ": field '", rope_key, ".low_freq_factor' must be positive");
  // high > low keeps the interpolation's denominator (high - low) non-zero.
  SEAM_CHECK(s.high_freq_factor > s.low_freq_factor, kConfig, ": '", rope_key, ".high_freq_factor' (",
             s.high_freq_factor, ") must be greater than 'low_freq_factor' (", s.low_freq_factor, ")");
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
  if (d.attention_bias == AttentionBiasRule::qkv_always) {
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

void read_sliding_window(const json& j, const ModelDefinition& d, ModelConfig& c) {
  // Sliding-window attention is not implemented. Within the first `sliding_window`
  // positions it equals full attention, so cap the context there instead of
  // silently computing a different model beyond it.
  bool used = d.sliding_window_opt_in ? optional_bool(j, kConfig, "use_sliding_window", false) : true;
  int window = used ? optional_int(j, kConfig, "sliding_window", 0) : 0;
  if (window > 0 && window < c.max_position_embeddings) c.max_position_embeddings = window;
}

}  // namespace

ModelConfig load_model_config(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  SEAM_CHECK(fs::is_directory(dir, ec), dir, ": model folder not found");
  const json j = read_json_file((fs::path(dir) / kConfig).string(), kConfig);
  SEAM_CHECK(j.is_object(), kConfig, ": expected a JSON object at the top level");

  ModelConfig c;
  const ModelDefinition& definition = read_architecture(j, c);
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
  std::string act = optional_string(j, kConfig, "hidden_act", "silu");
  SEAM_CHECK(act == "silu", kConfig, ": field 'hidden_act' is '", act, "' (supported: silu)");
  c.tie_word_embeddings = optional_bool(j, kConfig, "tie_word_embeddings", false);
  c.torch_dtype = parse_torch_dtype(j);
  c.quant = load_quant_config(dir);
  read_rope(j, c);
  read_attention_flags(j, definition, c);
  read_sliding_window(j, definition, c);

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

std::vector<float> rope_inv_freq(const ModelConfig& c) {
  SEAM_ASSERT(c.head_dim > 0 && c.head_dim % 2 == 0);
  const int n = c.head_dim / 2;
  std::vector<float> out(n);  // [head_dim / 2]
  const RopeScaling& s = c.rope_scaling;
  // As transformers' _compute_llama3_parameters, in double: low-frequency
  // (long-wavelength) components are slowed by `factor`, high-frequency ones kept,
  // and the band between interpolated smoothly.
  const double old_ctx = s.original_max_position_embeddings;
  const double low_freq_wavelen = old_ctx / s.low_freq_factor;
  const double high_freq_wavelen = old_ctx / s.high_freq_factor;
  for (int i = 0; i < n; ++i) {
    double inv = 1.0 / std::pow(double(c.rope_theta), double(2 * i) / double(c.head_dim));
    if (s.llama3) {
      double wavelen = 2.0 * std::numbers::pi / inv;
      if (wavelen > low_freq_wavelen) {
        inv = inv / s.factor;
      } else if (wavelen >= high_freq_wavelen) {
        double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        inv = (1.0 - smooth) * inv / s.factor + smooth * inv;
      }
    }
    out[i] = float(inv);
  }
  return out;
}

}  // namespace seam
