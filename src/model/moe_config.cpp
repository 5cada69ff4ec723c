// read_moe_config: the MoE fields of config.json, validated (see moe_config.h for the math
// they select). Fields seam needs are required even where transformers has a default (a
// missing num_experts is more likely a wrong folder than a wish for 60 experts).
#include "model/moe_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/json_file.h"
#include "model/model_config.h"

namespace seam {
namespace {

using nlohmann::json;
constexpr const char* kConfig = "config.json";

const json* find_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const json& v, const char* key) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
  }
  throw Error(detail::concat(kConfig, ": field '", key, "' must be an integer, got ", v.dump()));
}

int positive_int(const json& v, const char* key) {
  const int64_t x = as_int(v, key);
  SEAM_CHECK(x > 0 && x <= INT32_MAX, kConfig, ": field '", key, "' must be positive (and fit in int32), got ", x);
  return int(x);
}

int required_positive(const json& j, const char* key, const char* why) {
  const json* v = find_field(j, key);
  SEAM_CHECK(v, kConfig, ": missing field '", key, "'", why);
  return positive_int(*v, key);
}

bool optional_bool(const json& j, const char* key, bool fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  SEAM_CHECK(v->is_boolean(), kConfig, ": field '", key, "' must be true or false, got ", json_type_name(*v));
  return v->get<bool>();
}

// num_experts (Qwen, transformers 4) or num_local_experts (Mixtral; Qwen3-MoE in transformers 5):
// either key, and both must agree when both are given.
int read_n_experts(const json& j) {
  const json* a = find_field(j, "num_experts");
  const json* b = find_field(j, "num_local_experts");
  SEAM_CHECK(a || b, kConfig, ": missing field 'num_experts' (or 'num_local_experts'): a mixture-of-experts model");
  const int n = a ? positive_int(*a, "num_experts") : positive_int(*b, "num_local_experts");
  if (a && b)
    SEAM_CHECK(positive_int(*b, "num_local_experts") == n, kConfig, ": 'num_experts' (", n,
               ") and 'num_local_experts' (", b->dump(), ") disagree");
  return n;
}

std::vector<int> read_mlp_only_layers(const json& j, int n_layers) {
  std::vector<int> out;
  const json* v = find_field(j, "mlp_only_layers");
  if (!v) return out;
  SEAM_CHECK(v->is_array(), kConfig, ": field 'mlp_only_layers' must be a list of layer indices, got ",
             json_type_name(*v));
  for (const json& x : *v) {
    const int64_t i = as_int(x, "mlp_only_layers");
    SEAM_CHECK(i >= 0 && i < n_layers, kConfig, ": 'mlp_only_layers' lists layer ", i,
               ", which is not in [0, num_hidden_layers = ", n_layers, ")");
    out.push_back(int(i));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Qwen2-MoE (transformers 5) writes one attention type per layer. A sliding layer is only
// honoured with use_sliding_window (load_model_config's opt-in window rule reads layer_types
// then, and ignores them without it), so a sliding layer without it is a model seam would
// compute differently.
void check_layer_types(const json& j, int n_layers) {
  const json* v = find_field(j, "layer_types");
  if (!v) return;
  SEAM_CHECK(v->is_array() && int(v->size()) == n_layers, kConfig,
             ": field 'layer_types' must list one attention type per layer (", n_layers, ")");
  const bool sliding_on = optional_bool(j, "use_sliding_window", false);
  for (const json& t : *v) {
    SEAM_CHECK(t.is_string(), kConfig, ": field 'layer_types' must be a list of strings");
    const std::string s = t.get<std::string>();
    SEAM_CHECK(s == "full_attention" || (s == "sliding_attention" && sliding_on), kConfig, ": 'layer_types' has '",
               s, "'", s == "sliding_attention" ? " without use_sliding_window" : "",
               " (supported: full_attention, and sliding_attention with use_sliding_window)");
  }
}

}  // namespace

bool MoeConfig::is_sparse_layer(int i) const {
  if (!enabled()) return false;
  if (std::binary_search(mlp_only_layers.begin(), mlp_only_layers.end(), i)) return false;
  return (i + 1) % decoder_sparse_step == 0;
}

bool MoeConfig::any_dense_layer(int n_layers) const {
  for (int i = 0; i < n_layers; ++i)
    if (!is_sparse_layer(i)) return true;
  return false;
}

int mlp_buffer_width(const ModelConfig& c) {
  int w = c.moe.shared_expert_intermediate_size;
  if (c.moe.any_dense_layer(c.n_layers)) w = std::max(w, c.intermediate_size);
  return std::max(w, 1);
}

const char* moe_style_name(MoeStyle s) {
  switch (s) {
    case MoeStyle::none: return "none";
    case MoeStyle::qwen2: return "qwen2";
    case MoeStyle::qwen3: return "qwen3";
    case MoeStyle::mixtral: return "mixtral";
  }
  return "?";
}

void read_moe_config(const json& j, MoeStyle style, ModelConfig& c) {
  if (style == MoeStyle::none) return;
  MoeConfig& m = c.moe;
  m.style = style;
  m.n_experts = read_n_experts(j);
  m.n_experts_per_tok = required_positive(j, "num_experts_per_tok", " (experts per token)");
  SEAM_CHECK(m.n_experts_per_tok <= m.n_experts, kConfig, ": 'num_experts_per_tok' (", m.n_experts_per_tok,
             ") is more than the ", m.n_experts, " experts");
  if (style == MoeStyle::mixtral) {
    // Mixtral's experts are intermediate_size wide, every layer is sparse and the chosen
    // weights are always renormalised; router_jitter_noise only acts in training.
    m.expert_intermediate_size = c.intermediate_size;
    return;
  }
  m.expert_intermediate_size = required_positive(j, "moe_intermediate_size", " (the experts' width)");
  m.norm_topk_prob = optional_bool(j, "norm_topk_prob", false);
  if (const json* v = find_field(j, "decoder_sparse_step")) m.decoder_sparse_step = positive_int(*v, "decoder_sparse_step");
  m.mlp_only_layers = read_mlp_only_layers(j, c.n_layers);
  if (style == MoeStyle::qwen2) {
    m.shared_expert_intermediate_size =
        required_positive(j, "shared_expert_intermediate_size", " (Qwen2-MoE's shared expert)");
    check_layer_types(j, c.n_layers);
  }
}

}  // namespace seam
