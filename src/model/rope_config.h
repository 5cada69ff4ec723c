// RopeConfig: one rotary-embedding setup read from config.json (base, scaling) and the
// inverse frequencies it gives. A model has one for its full-attention layers and, in
// Gemma 3, a second for its sliding-window layers (their own base, no scaling).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam {

enum class RopeType {
  none,      // 1 / base^(2i / rotary_dim)
  llama3,    // Llama 3.1's band-wise slow-down of the low frequencies
  linear,    // every frequency divided by `factor` (Gemma 3's global layers)
  longrope,  // Phi-3's per-frequency short and long factors
};

struct RopeScaling {
  RopeType type = RopeType::none;
  // The config's numbers in double, as transformers' float64 reference reads them (the
  // tables are computed in double: rope_inv_freq_exact).
  double factor = 1.0;            // llama3, linear
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  // llama3: the pre-training context. longrope: a token at a position >= this uses the long
  // table (see rope_inv_freq), and the attention factor below derives from it.
  int original_max_position_embeddings = 8192;
  std::vector<double> short_factor, long_factor;  // longrope, [rotary_dim / 2] each
  // longrope: transformers multiplies cos and sin by it (so q.k of the rotated dims by its
  // square); 1 for every other type.
  float attention_factor = 1.f;
  bool operator==(const RopeScaling&) const = default;
};

struct RopeConfig {
  double theta = 10000.0;
  RopeScaling scaling;
  bool operator==(const RopeConfig&) const = default;
};

// What read_rope_config needs of the rest of config.json.
struct RopeContext {
  const nlohmann::json* top = nullptr;  // the config object (top-level rope_theta, original_max_...)
  int rotary_dim = 0;                   // head_dim * partial_rotary_factor
  int max_position_embeddings = 0;
};

// Reads one RoPE dict (`rope` may be null: the default RoPE). `where` names it in errors
// ("rope_scaling", "rope_parameters.full_attention"); `fallback_theta` is the base when
// neither the dict nor the top level gives one (top_theta_key: the top-level key to read,
// "" for none). Throws seam::Error naming config.json and the field.
RopeConfig read_rope_config(const nlohmann::json* rope, const std::string& where, const RopeContext& ctx,
                            const char* top_theta_key, double fallback_theta);

// The inverse frequencies [rotary_dim / 2], scaling applied; `long_table` picks LongRoPE's
// long factors (only for longrope).
std::vector<double> rope_inv_freq_exact(const RopeConfig& r, int rotary_dim, bool long_table = false);
// The same table rounded to float32.
std::vector<float> rope_inv_freq(const RopeConfig& r, int rotary_dim, bool long_table = false);

}  // namespace seam
