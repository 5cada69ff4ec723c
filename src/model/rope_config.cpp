// read_rope_config / rope_inv_freq: RoPE as transformers' modeling_rope_utils computes it
// (default, linear, llama3, longrope); any other type is an error, never ignored.
#include "model/rope_config.h"

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "model/config_json.h"
#include "model/json_file.h"

namespace seam {
namespace {

using namespace config_json;
constexpr const char* kConfig = "config.json";

std::vector<double> read_factors(const json& rope, const std::string& where, const char* key, int n) {
  const json* v = find_field(rope, key);
  SEAM_CHECK(v, kConfig, ": missing field '", where, ".", key, "' (required by rope type longrope)");
  SEAM_CHECK(v->is_array() && int(v->size()) == n, kConfig, ": field '", where, ".", key,
             "' must be a list of rotary_dim / 2 = ", n, " numbers");
  std::vector<double> out;
  for (const json& x : *v) {
    double f = as_number(x, kConfig, where + "." + key);
    SEAM_CHECK(std::isfinite(f) && f > 0, kConfig, ": field '", where, ".", key, "' has a non-positive factor ", f);
    out.push_back(f);
  }
  return out;
}

void read_llama3(const json& rope, const std::string& where, RopeScaling& s) {
  auto need = [&](const char* key) -> const json& {
    const json* v = find_field(rope, key);
    SEAM_CHECK(v, kConfig, ": missing field '", where, ".", key, "' (required by rope type llama3)");
    return *v;
  };
  s.factor = as_number(need("factor"), kConfig, where + ".factor");
  s.low_freq_factor = as_number(need("low_freq_factor"), kConfig, where + ".low_freq_factor");
  s.high_freq_factor = as_number(need("high_freq_factor"), kConfig, where + ".high_freq_factor");
  int64_t orig = as_int(need("original_max_position_embeddings"), kConfig, where + ".original_max_position_embeddings");
  SEAM_CHECK(orig > 0 && orig <= INT32_MAX, kConfig, ": field '", where,
             ".original_max_position_embeddings' must be positive, got ", orig);
  s.original_max_position_embeddings = int(orig);
  SEAM_CHECK(std::isfinite(s.factor) && s.factor >= 1.0, kConfig, ": field '", where, ".factor' must be >= 1, got ", s.factor);
  SEAM_CHECK(std::isfinite(s.low_freq_factor) && s.low_freq_factor > 0.0, kConfig, ": field '", where, ".low_freq_factor' must be positive");
  // high > low keeps the interpolation's denominator (high - low) non-zero.
  SEAM_CHECK(std::isfinite(s.high_freq_factor) && s.high_freq_factor > s.low_freq_factor, kConfig, ": '", where, ".high_freq_factor' (",
             s.high_freq_factor, ") must be greater than 'low_freq_factor' (", s.low_freq_factor, ")");
}

// Phi-3's LongRoPE as transformers' _compute_longrope_parameters: the pre-training context
// comes from the dict (transformers 5) or the top level (transformers 4); the attention
// factor is the dict's, else sqrt(1 + ln(s) / ln(original_max)) with s the dict's `factor`
// or max_position_embeddings / original_max (1 when s <= 1).
void read_longrope(const json& rope, const std::string& where, const RopeContext& ctx, RopeScaling& s) {
  const json* orig_v = find_field(rope, "original_max_position_embeddings");
  std::string orig_key = where + ".original_max_position_embeddings";
  if (!orig_v && ctx.top) {
    orig_v = find_field(*ctx.top, "original_max_position_embeddings");
    orig_key = "original_max_position_embeddings";
  }
  SEAM_CHECK(orig_v, kConfig, ": missing field 'original_max_position_embeddings' (required by rope type longrope)");
  int64_t orig = as_int(*orig_v, kConfig, orig_key);
  SEAM_CHECK(orig > 1 && orig <= INT32_MAX, kConfig, ": field '", orig_key, "' must be above 1, got ", orig);
  s.original_max_position_embeddings = int(orig);
  const int n = ctx.rotary_dim / 2;
  s.short_factor = read_factors(rope, where, "short_factor", n);
  s.long_factor = read_factors(rope, where, "long_factor", n);
  double scale = double(ctx.max_position_embeddings) / double(orig);
  if (const json* f = find_field(rope, "factor")) scale = as_number(*f, kConfig, where + ".factor");
  double af = scale <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(scale) / std::log(double(orig)));
  if (const json* a = find_field(rope, "attention_factor")) af = as_number(*a, kConfig, where + ".attention_factor");
  SEAM_CHECK(std::isfinite(af) && af > 0, kConfig, ": field '", where, ".attention_factor' must be positive, got ",
             af);
  s.attention_factor = float(af);
}

}  // namespace

RopeConfig read_rope_config(const json* rope, const std::string& where, const RopeContext& ctx,
                            const char* top_theta_key, double fallback_theta) {
  RopeConfig r;
  const json* top_theta = ctx.top && *top_theta_key ? find_field(*ctx.top, top_theta_key) : nullptr;
  const json* nested_theta = rope ? find_field(*rope, "rope_theta") : nullptr;
  double theta = top_theta ? as_number(*top_theta, kConfig, top_theta_key) : fallback_theta;
  if (nested_theta) {
    double t = as_number(*nested_theta, kConfig, where + ".rope_theta");
    SEAM_CHECK(!top_theta || t == theta, kConfig, ": '", top_theta_key, "' (", theta, ") and '", where,
               ".rope_theta' (", t, ") disagree");
    theta = t;
  }
  SEAM_CHECK(std::isfinite(theta) && theta > 0, kConfig, ": field 'rope_theta' must be positive, got ", theta);
  r.theta = theta;
  if (!rope) return r;

  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (const json* v = find_field(*rope, key)) {
      SEAM_CHECK(v->is_string(), kConfig, ": field '", where, ".", key, "' must be a string");
      type = v->get<std::string>();
      break;
    }
  }
  RopeScaling& s = r.scaling;
  if (type == "default") return r;
  if (type == "llama3") {
    s.type = RopeType::llama3;
    read_llama3(*rope, where, s);
  } else if (type == "linear") {
    s.type = RopeType::linear;
    const json* f = find_field(*rope, "factor");
    SEAM_CHECK(f, kConfig, ": missing field '", where, ".factor' (required by rope type linear)");
    s.factor = as_number(*f, kConfig, where + ".factor");
    SEAM_CHECK(std::isfinite(s.factor) && s.factor >= 1.0, kConfig, ": field '", where, ".factor' must be >= 1, got ",
               s.factor);
  } else if (type == "longrope") {
    s.type = RopeType::longrope;
    read_longrope(*rope, where, ctx, s);
  } else {
    throw Error(detail::concat(kConfig, ": ", where, " type '", type,
                               "' is not supported (supported: default, linear, llama3, longrope)"));
  }
  return r;
}

std::vector<double> rope_inv_freq_exact(const RopeConfig& r, int rotary_dim, bool long_table) {
  SEAM_ASSERT(rotary_dim > 0 && rotary_dim % 2 == 0);
  const int n = rotary_dim / 2;
  std::vector<double> out(static_cast<size_t>(n));  // [rotary_dim / 2]
  const RopeScaling& s = r.scaling;
  SEAM_ASSERT(!long_table || s.type == RopeType::longrope);
  // As transformers' _compute_llama3_parameters, in double: low-frequency
  // (long-wavelength) components are slowed by `factor`, high-frequency ones kept,
  // and the band between interpolated smoothly.
  const double old_ctx = s.original_max_position_embeddings;
  const double low_freq_wavelen = old_ctx / s.low_freq_factor;
  const double high_freq_wavelen = old_ctx / s.high_freq_factor;
  for (int i = 0; i < n; ++i) {
    double inv = 1.0 / std::pow(r.theta, double(2 * i) / double(rotary_dim));
    if (s.type == RopeType::llama3) {
      double wavelen = 2.0 * std::numbers::pi / inv;
      if (wavelen > low_freq_wavelen) {
        inv = inv / s.factor;
      } else if (wavelen >= high_freq_wavelen) {
        double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        inv = (1.0 - smooth) * inv / s.factor + smooth * inv;
      }
    } else if (s.type == RopeType::linear) {
      inv /= s.factor;
    } else if (s.type == RopeType::longrope) {
      inv /= long_table ? s.long_factor[size_t(i)] : s.short_factor[size_t(i)];
    }
    out[size_t(i)] = inv;
  }
  return out;
}

std::vector<float> rope_inv_freq(const RopeConfig& r, int rotary_dim, bool long_table) {
  const std::vector<double> exact = rope_inv_freq_exact(r, rotary_dim, long_table);
  return std::vector<float>(exact.begin(), exact.end());
}

}  // namespace seam
