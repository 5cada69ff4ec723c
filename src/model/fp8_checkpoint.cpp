#include "model/fp8_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace seam {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The scale values must be usable divisors and multipliers: finite and positive.
void check_scale_values(const HostTensor& t) {
  SEAM_CHECK(t.dtype != DType::fp8_e4m3, "tensor '", t.name, "' is F8_E4M3: scales must be F32, F16 or BF16");
  std::vector<float> v(size_t(t.numel()));
  convert_to_f32(t.data, t.dtype, v.data(), v.size());
  for (size_t i = 0; i < v.size(); ++i)
    SEAM_CHECK(std::isfinite(v[i]) && v[i] > 0.f, "tensor '", t.name, "' holds ", v[i], " at element ", i,
               ": FP8 scales must be finite and positive");
}

bool is_scalar(const HostTensor& t) { return t.numel() == 1 && t.shape.size() <= 2; }

}  // namespace

std::string module_of(const std::string& weight_name) {
  return ends_with(weight_name, ".weight") ? weight_name.substr(0, weight_name.size() - 7) : weight_name;
}

bool fp8_linear_weight(const QuantConfig& q, const HostTensor& weight) {
  if (q.method == QuantMethod::online_fp8) return !q.ignores(module_of(weight.name));
  return q.serialized() && weight.dtype == DType::fp8_e4m3;
}

void take_fp8_tensors(const ModelConfig& c, Checkpoint& ck, const Fp8TensorSource& src) {
  const QuantConfig& q = c.quant;
  const std::string fmt = detail::concat(quant_method_name(q.method), " (", q.source, ")");
  // Why an F8_E4M3 tensor cannot load when the checkpoint is not a serialized FP8 one.
  const char* not_serialized = q.quantized() ? "--quantization fp8 quantizes a float checkpoint"
                                             : "config.json has no quantization_config (and there is no "
                                               "hf_quant_config.json)";

  // An FP8 weight's scales: the scheme's weight scale and, for static activations, the input
  // scale, each of the shape the scheme needs with finite positive values.
  // `w` may be a rows() view of the stored tensor (Phi-3's fused qkv_proj / gate_up_proj, split
  // into parts at load): the scales are the stored tensor's, of `n_out` rows, taken once.
  auto take_scales = [&](const HostTensor& w, int64_t n_out) {
    if (ck.fp8_scales.count(w.name)) return;
    const std::string module = module_of(w.name);
    const int64_t n_in = w.shape[1];
    const std::vector<int64_t> stored = {n_out, n_in};
    Fp8Scales s;
    const std::string ws_name = module + "." + q.weight_scale_name;
    SEAM_CHECK(src.contains(ws_name), "missing tensor '", ws_name, "': the ", fmt, " weight '", w.name,
               "' needs its ", fp8_weight_scheme_name(q.weight), " scale");
    s.weight_scale = src.take(ws_name);
    bool shape_ok = false;
    std::string want;
    switch (q.weight) {
      case Fp8WeightScheme::per_tensor:
        shape_ok = is_scalar(s.weight_scale);
        want = "[] or [1]";
        break;
      case Fp8WeightScheme::per_channel:
        shape_ok = s.weight_scale.shape == std::vector<int64_t>{n_out, 1} ||
                   s.weight_scale.shape == std::vector<int64_t>{n_out};
        want = detail::concat("[", n_out, ", 1] or [", n_out, "]");
        break;
      case Fp8WeightScheme::block128: {
        const std::vector<int64_t> b = {(n_out + kFp8Group - 1) / kFp8Group, (n_in + kFp8Group - 1) / kFp8Group};
        shape_ok = s.weight_scale.shape == b;
        want = shape_str(b);
        break;
      }
    }
    SEAM_CHECK(shape_ok, "tensor '", ws_name, "' has shape ", shape_str(s.weight_scale.shape), ", expected ", want,
               " (", fp8_weight_scheme_name(q.weight), " scales of a ", shape_str(stored), " weight, ", fmt, ")");
    check_scale_values(s.weight_scale);
    const std::string is_name = module + ".input_scale";
    if (q.weight_only) {
      SEAM_CHECK(!src.contains(is_name), "tensor '", is_name, "' is an activation scale, but ", fmt,
                 " is weight-only FP8 (no input_activations): activations are not quantized");
    } else if (q.act == Fp8ActScheme::static_per_tensor) {
      SEAM_CHECK(src.contains(is_name), "missing tensor '", is_name, "': ", fmt,
                 " quantizes activations with a static per-tensor scale");
      s.input_scale = src.take(is_name);
      SEAM_CHECK(is_scalar(s.input_scale), "tensor '", is_name, "' has shape ", shape_str(s.input_scale.shape),
                 ", expected [] or [1] (a static per-tensor activation scale)");
      check_scale_values(s.input_scale);
    } else {
      SEAM_CHECK(!src.contains(is_name), "tensor '", is_name, "' is a static activation scale, but ", fmt,
                 " quantizes activations dynamically (", fp8_act_scheme_name(q.act), ")");
    }
    ck.fp8_scales.emplace(w.name, std::move(s));
  };

  // Mixture-of-experts layers: publishers quantize the experts (and Qwen2-MoE's shared expert)
  // and leave the router float (vLLM and sglang never quantize it). Each of these weights may be
  // F8_E4M3 with its scales, or float (a checkpoint that quantized the attention only): an FP8
  // expert is dequantized at load (model/fp8_dequant.h), an FP8 router or shared expert runs as
  // an FP8 linear. An ignored module must be float, as everywhere.
  for (const LayerTensors& l : ck.layers) {
    if (!l.moe.defined()) continue;
    std::vector<const HostTensor*> moe = {&l.moe.router, &l.moe.shared_gate_proj, &l.moe.shared_up_proj,
                                          &l.moe.shared_down_proj, &l.moe.shared_expert_gate};
    for (const auto* v : {&l.moe.gate, &l.moe.up, &l.moe.down})
      for (const HostTensor& t : *v) moe.push_back(&t);
    for (const HostTensor* t : moe) {
      if (!t->defined() || t->dtype != DType::fp8_e4m3) continue;
      SEAM_CHECK(q.serialized(), "tensor '", t->name, "' is F8_E4M3, but ", not_serialized);
      // transformers 5's in-memory layout stores a layer's experts as one 3-D parameter
      // (experts.gate_up_proj); FP8 checkpoints store each expert's projections with their scales.
      SEAM_CHECK(ends_with(t->name, ".weight"), "tensor '", t->name,
                 "' is F8_E4M3: FP8 experts in the fused experts.gate_up_proj / down_proj layout are not supported "
                 "(FP8 checkpoints store experts.<e>.gate_proj / up_proj / down_proj with their scales)");
      const std::string module = module_of(t->name);
      SEAM_CHECK(!q.ignores(module), "tensor '", t->name, "' is F8_E4M3, but ", q.source, " leaves '", module,
                 "' unquantized (ignore list)");
      take_scales(*t, t->shape[0]);
    }
  }

  // Tensors that are never quantized.
  std::vector<const HostTensor*> plain = {&ck.embed_tokens, &ck.norm};
  for (const LayerTensors& l : ck.layers)
    for (const HostTensor* t : {&l.input_layernorm, &l.post_attention_layernorm, &l.pre_feedforward_layernorm,
                                &l.post_feedforward_layernorm, &l.q_norm, &l.k_norm, &l.q_bias, &l.k_bias, &l.v_bias,
                                &l.o_bias})
      plain.push_back(t);
  for (const HostTensor* t : plain)
    SEAM_CHECK(!t->defined() || t->dtype != DType::fp8_e4m3, "tensor '", t->name,
               "' is F8_E4M3, but only linear weights may be FP8");

  std::vector<const HostTensor*> linears;
  for (const LayerTensors& l : ck.layers)
    for (const HostTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      if (t->defined()) linears.push_back(t);  // a sparse (MoE) layer has no dense MLP
  const bool head_own = !c.tie_word_embeddings;
  if (head_own) linears.push_back(&ck.lm_head);
  // The stored tensor's rows for each name: a fused tensor's parts are views of one tensor.
  std::map<std::string, int64_t> stored_rows;
  for (const HostTensor* w : linears) {
    int64_t& rows = stored_rows[w->name];
    rows = std::max(rows, w->row_offset + w->shape[0]);
  }

  for (const HostTensor* w : linears) {
    const std::string module = module_of(w->name);
    const bool is_fp8 = w->dtype == DType::fp8_e4m3;
    if (!q.serialized()) {
      SEAM_CHECK(!is_fp8, "tensor '", w->name, "' is F8_E4M3, but ", not_serialized);
      continue;
    }
    const bool ignored = q.ignores(module);
    const bool is_head = w == &ck.lm_head;
    if (ignored) {
      SEAM_CHECK(!is_fp8, "tensor '", w->name, "' is F8_E4M3, but ", q.source, " leaves '", module,
                 "' unquantized (ignore list)");
      continue;
    }
    if (!is_fp8) {
      // The head stays in float unless the checkpoint stored it in FP8 (vLLM quantizes no head).
      SEAM_CHECK(is_head, "tensor '", w->name, "' is ", dtype_name(w->dtype), ", but ", fmt, " quantizes '", module,
                 "' (expected F8_E4M3, or the module in the ignore list)");
      continue;
    }
    take_scales(*w, stored_rows.at(w->name));
  }

  // KV cache scales: compressed-tensors ("self_attn.k_scale") and ModelOpt / fp8
  // ("self_attn.k_proj.k_scale"); one positive scalar each. AutoFP8's older checkpoints store
  // one "self_attn.kv_scale" for both caches (vLLM reads it as k_scale = v_scale = kv_scale):
  // it is entered under both names, so a layer that also has its own k_scale or v_scale is
  // refused by kv_cache_scales as a second scale for the same cache.
  if (!q.serialized()) return;
  for (const std::string& name : src.names()) {
    const bool combined = ends_with(name, ".kv_scale");
    if (!combined && !ends_with(name, ".k_scale") && !ends_with(name, ".v_scale")) continue;
    HostTensor t = src.take(name);
    SEAM_CHECK(is_scalar(t), "tensor '", name, "' has shape ", shape_str(t.shape),
               ", expected [] or [1] (a per-tensor KV cache scale)");
    check_scale_values(t);
    if (!combined) {
      SEAM_CHECK(ck.kv_scales.emplace(name, t).second, "tensor '", name, "' and the '",
                 name.substr(0, name.rfind('.')), ".kv_scale' beside it both give one cache scale");
      continue;
    }
    const std::string module = name.substr(0, name.size() - std::string(".kv_scale").size());
    for (const char* which : {".k_scale", ".v_scale"})
      SEAM_CHECK(ck.kv_scales.emplace(module + which, t).second, "tensors '", name, "' and '", module, which,
                 "' both give the ", which[1], " cache scale of '", module, "'");
  }
}

}  // namespace seam
