#include "model/quant_config.h"

#include <cmath>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "model/json_file.h"

namespace seam {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kHfQuant = "hf_quant_config.json";

// One JSON object being read, with the path of field names that led to it for messages:
// "config.json: quantization_config.config_groups.group_0.weights.strategy is 'group' ...".
struct Obj {
  const json& j;
  std::string file, path;

  std::string where(const std::string& key) const { return file + ": " + path + (path.empty() ? "" : ".") + key; }
  const json* find(const std::string& key) const {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::string string(const std::string& key, const std::string& fallback, bool required = false) const {
    const json* v = find(key);
    SEAM_CHECK(v || !required, where(key), " is missing");
    if (!v) return fallback;
    SEAM_CHECK(v->is_string(), where(key), " must be a string, got ", json_type_name(*v));
    return v->get<std::string>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    SEAM_CHECK(v->is_boolean(), where(key), " must be true or false, got ", json_type_name(*v));
    return v->get<bool>();
  }
  Obj object(const std::string& key, bool required) const {
    const json* v = find(key);
    static const json kEmpty = json::object();
    SEAM_CHECK(v || !required, where(key), " is missing");
    if (!v) return Obj{kEmpty, file, path + (path.empty() ? "" : ".") + key};
    SEAM_CHECK(v->is_object(), where(key), " must be an object, got ", json_type_name(*v));
    return Obj{*v, file, path + (path.empty() ? "" : ".") + key};
  }
  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> out;
    const json* v = find(key);
    if (!v) return out;
    SEAM_CHECK(v->is_array(), where(key), " must be a list of module names, got ", json_type_name(*v));
    for (const auto& e : *v) {
      SEAM_CHECK(e.is_string(), where(key), " must be a list of module names, has a ", json_type_name(e));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  bool empty() const { return j.empty(); }
};

// The FP8 element type: 8-bit float (E4M3). Anything else (int8, 4-bit) is another format.
void check_fp8_args(const Obj& o, const char* what) {
  const json* bits = o.find("num_bits");
  SEAM_CHECK(bits && bits->is_number_integer() && bits->get<int>() == 8, o.where("num_bits"), " must be 8 for FP8 ",
             what, ", got ", bits ? bits->dump() : "nothing");
  const std::string type = o.string("type", "", true);
  SEAM_CHECK(type == "float", o.where("type"), " is '", type, "': seam loads FP8 (type float) ", what,
             " only (int quantization is not supported)");
  SEAM_CHECK(o.boolean("symmetric", true), o.where("symmetric"), " is false: seam supports symmetric FP8 only");
}

void check_block_128(const Obj& o, const std::string& key) {
  const json* b = o.find(key);
  SEAM_CHECK(b && b->is_array() && b->size() == 2 && (*b)[0].is_number_integer() && (*b)[1].is_number_integer(),
             o.where(key), " must be a list of two integers");
  SEAM_CHECK((*b)[0].get<int64_t>() == 128 && (*b)[1].get<int64_t>() == 128, o.where(key), " is ", b->dump(),
             ": seam supports 128x128 weight blocks only");
}

// compressed-tensors' input_activations (a W8A8 scheme): the activation scheme its weight
// scheme allows.
void read_ct_activations(const Obj& a, QuantConfig& q) {
  check_fp8_args(a, "activations");
  const std::string as = a.string("strategy", "", true);
  const bool dynamic = a.boolean("dynamic", false);
  if (q.weight == Fp8WeightScheme::block128) {
    const json* gs = a.find("group_size");
    SEAM_CHECK(dynamic && as == "group" && gs && gs->is_number_integer() && gs->get<int>() == 128, a.where("strategy"),
               " is '", as, "': block weights need dynamic activations in groups of 128 (strategy group, "
               "group_size 128, dynamic true)");
    q.act = Fp8ActScheme::dynamic_group128;
  } else if (as == "token") {
    SEAM_CHECK(dynamic, a.where("dynamic"), " is false: per-token activation scales are dynamic only");
    q.act = Fp8ActScheme::dynamic_per_token;
  } else if (as == "tensor") {
    SEAM_CHECK(!dynamic, a.where("dynamic"),
               " is true: dynamic per-tensor activation scales are not supported (use per-token)");
    q.act = Fp8ActScheme::static_per_tensor;
  } else {
    throw Error(detail::concat(a.where("strategy"), " is '", as, "' (supported: token, tensor)"));
  }
}

void read_compressed_tensors(const Obj& qc, QuantConfig& q) {
  q.method = QuantMethod::compressed_tensors;
  const std::string fmt = qc.string("format", "float-quantized");
  SEAM_CHECK(fmt == "float-quantized" || fmt == "naive-quantized", qc.where("format"), " is '", fmt,
             "' (supported: float-quantized, naive-quantized)");
  const Obj groups = qc.object("config_groups", true);
  SEAM_CHECK(groups.j.size() == 1, groups.where(""), " has ", groups.j.size(),
             " groups: seam supports one quantization scheme for all linear layers");
  const Obj g{groups.j.begin().value(), groups.file, groups.path + "." + groups.j.begin().key()};
  SEAM_CHECK(g.j.is_object(), g.where(""), " must be an object");
  for (const std::string& t : g.strings("targets"))
    SEAM_CHECK(t == "Linear", g.where("targets"), " names '", t, "': seam quantizes all Linear layers or none");
  const Obj w = g.object("weights", true);
  check_fp8_args(w, "weights");
  SEAM_CHECK(!w.boolean("dynamic", false), w.where("dynamic"), " is true: dynamic weight quantization is not supported");
  const std::string ws = w.string("strategy", "", true);
  if (ws == "tensor") {
    q.weight = Fp8WeightScheme::per_tensor;
  } else if (ws == "channel") {
    q.weight = Fp8WeightScheme::per_channel;
  } else if (ws == "block") {
    q.weight = Fp8WeightScheme::block128;
    check_block_128(w, "block_structure");
  } else {
    throw Error(detail::concat(w.where("strategy"), " is '", ws, "' (supported: tensor, channel, block)"));
  }
  SEAM_CHECK(!g.find("output_activations"), g.where("output_activations"),
             " is set: output quantization is not supported (seam quantizes weights and inputs)");
  if (!g.find("input_activations")) {
    // null or absent: weight-only FP8 (W8A16), no activation scheme to read; the weights are
    // dequantized at load.
    q.weight_only = true;
  } else {
    read_ct_activations(g.object("input_activations", true), q);
  }
  q.ignore = qc.strings("ignore");
  // A 2:4-sparse checkpoint stores its weights compressed with a bitmask (sparse-24-bitmask):
  // other tensors than a dense FP8 weight, which seam cannot read as one.
  // compressed-tensors' "dense" sparsity format is the identity (weights stored uncompressed).
  const json* sparsity = qc.find("sparsity_config");
  auto dense_format = [&] {
    const auto f = sparsity->find("format");
    return f != sparsity->end() && f->is_string() && f->get<std::string>() == "dense";
  };
  const bool dense = !sparsity || (sparsity->is_object() && (sparsity->empty() || dense_format()));
  SEAM_CHECK(dense, qc.where("sparsity_config"),
             " is set: sparse compressed-tensors checkpoints are not supported (dense FP8 only)");
  // The KV cache's FP8 scales, when the checkpoint has them: one per tensor (self_attn.k_scale /
  // v_scale, what seam reads); per-head or dynamic KV quantization is another format.
  const Obj kv = qc.object("kv_cache_scheme", false);
  if (!kv.empty()) {
    check_fp8_args(kv, "KV cache");
    const std::string ks = kv.string("strategy", "tensor");
    SEAM_CHECK(ks == "tensor" && !kv.boolean("dynamic", false), kv.where("strategy"), " is '", ks,
               "'", kv.boolean("dynamic", false) ? " (dynamic)" : "",
               ": seam reads static per-tensor KV cache scales only");
  }
}

void read_fp8(const Obj& qc, QuantConfig& q) {
  q.method = QuantMethod::fp8;
  const std::string fmt = qc.string("fmt", "e4m3");
  SEAM_CHECK(fmt == "e4m3", qc.where("fmt"), " is '", fmt, "': seam supports e4m3 only");
  const std::string scheme = qc.string("activation_scheme", "dynamic");
  SEAM_CHECK(scheme == "dynamic" || scheme == "static", qc.where("activation_scheme"), " is '", scheme,
             "' (supported: dynamic, static)");
  if (qc.find("weight_block_size")) {
    check_block_128(qc, "weight_block_size");
    SEAM_CHECK(scheme == "dynamic", qc.where("activation_scheme"),
               " is 'static': block-quantized weights need dynamic activation groups");
    q.weight = Fp8WeightScheme::block128;
    q.act = Fp8ActScheme::dynamic_group128;
    q.weight_scale_name = "weight_scale_inv";
  } else {
    q.weight = Fp8WeightScheme::per_tensor;
    q.act = scheme == "dynamic" ? Fp8ActScheme::dynamic_per_token : Fp8ActScheme::static_per_tensor;
  }
  q.ignore = qc.strings("modules_to_not_convert");
  for (auto& m : qc.strings("ignored_layers")) q.ignore.push_back(m);
}

void read_fbgemm(const Obj& qc, QuantConfig& q) {
  q.method = QuantMethod::fbgemm_fp8;
  q.weight = Fp8WeightScheme::per_channel;
  q.act = Fp8ActScheme::dynamic_per_token;
  if (const json* ub = qc.find("activation_scale_ub")) {
    SEAM_CHECK(ub->is_number() && std::isfinite(ub->get<double>()) && ub->get<double>() > 0,
               qc.where("activation_scale_ub"), " must be a positive number, got ", ub->dump());
    q.act_amax_ub = ub->get<float>();
  }
  q.ignore = qc.strings("modules_to_not_convert");
}

// ModelOpt: {"quant_algo": "FP8" | "FP8_PER_CHANNEL_PER_TOKEN", "kv_cache_quant_algo": ...,
// "exclude_modules": [...]}, in hf_quant_config.json's "quantization" or inline in config.json's
// quantization_config. FP8: per-tensor weight and static input scales; FP8_PER_CHANNEL_PER_TOKEN:
// per-channel weight scales, dynamic per-token activations (as vLLM reads them); FP8_PB_WO:
// 128x128 block weight scales (weight_scale [ceil(out/128), ceil(in/128)]), weight-only.
void read_modelopt(const Obj& qc, QuantConfig& q) {
  q.method = QuantMethod::modelopt;
  const std::string algo = qc.string("quant_algo", "", true);
  SEAM_CHECK(algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN" || algo == "FP8_PB_WO", qc.where("quant_algo"),
             " is '", algo, "' (supported: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO)");
  if (algo == "FP8_PB_WO") {  // 128x128 block weight scales (weight_scale), weight-only
    q.weight = Fp8WeightScheme::block128;
    q.weight_only = true;
  } else {
    const bool channel = algo == "FP8_PER_CHANNEL_PER_TOKEN";
    q.weight = channel ? Fp8WeightScheme::per_channel : Fp8WeightScheme::per_tensor;
    q.act = channel ? Fp8ActScheme::dynamic_per_token : Fp8ActScheme::static_per_tensor;
  }
  const std::string kv = qc.string("kv_cache_quant_algo", "");
  SEAM_CHECK(kv.empty() || kv == "FP8", qc.where("kv_cache_quant_algo"), " is '", kv, "' (supported: FP8 or none)");
  q.ignore = qc.strings("exclude_modules");
}

// ModelOpt's exclude_modules use shell-style wildcards ("*lm_head*"); the others exact names
// or "re:" regexes.
bool glob_match(const std::string& pat, const std::string& s) {
  size_t p = 0, i = 0, star = std::string::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace

const char* quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::none: return "none";
    case QuantMethod::compressed_tensors: return "compressed-tensors";
    case QuantMethod::fp8: return "fp8";
    case QuantMethod::fbgemm_fp8: return "fbgemm_fp8";
    case QuantMethod::modelopt: return "modelopt";
    case QuantMethod::online_fp8: return "fp8 (online, --quantization fp8)";
  }
  return "?";
}

bool QuantConfig::ignores(const std::string& module) const {
  for (const std::string& m : ignore) {
    if (m.rfind("re:", 0) == 0) {
      if (std::regex_match(module, std::regex(m.substr(3)))) return true;
    } else if (m.find_first_of("*?") != std::string::npos) {
      if (glob_match(m, module)) return true;
    } else if (m == module) {
      return true;
    }
  }
  return false;
}

QuantConfig load_quant_config(const std::string& dir) {
  const json config = read_json_file((fs::path(dir) / "config.json").string(), "config.json");
  QuantConfig q;
  if (!config.is_object()) return q;  // load_model_config reports it
  auto it = config.find("quantization_config");
  if (it != config.end() && !it->is_null()) {
    q.source = "config.json";
    const Obj qc{*it, "config.json", "quantization_config"};
    SEAM_CHECK(it->is_object(), "config.json: quantization_config must be an object, got ", json_type_name(*it));
    const std::string method = qc.string("quant_method", "", true);
    if (method == "compressed-tensors") read_compressed_tensors(qc, q);
    else if (method == "fp8") read_fp8(qc, q);
    else if (method == "fbgemm_fp8") read_fbgemm(qc, q);
    else if (method == "modelopt") read_modelopt(qc.find("quantization") ? qc.object("quantization", true) : qc, q);
    else
      throw Error(detail::concat("config.json: quantization_config.quant_method is '", method,
                                 "' (supported: compressed-tensors, fp8, fbgemm_fp8, modelopt)"));
  } else {
    std::error_code ec;
    const fs::path p = fs::path(dir) / kHfQuant;
    if (!fs::exists(p, ec)) return q;
    const json j = read_json_file(p.string(), kHfQuant);
    SEAM_CHECK(j.is_object(), kHfQuant, ": expected a JSON object at the top level");
    q.source = kHfQuant;
    read_modelopt(Obj{j, kHfQuant, ""}.object("quantization", true), q);
  }
  // Compile the patterns now: a bad regex is a config error, not a crash at first use.
  for (const std::string& m : q.ignore) {
    if (m.rfind("re:", 0) != 0) continue;
    try {
      std::regex r(m.substr(3));
    } catch (const std::regex_error& e) {
      throw Error(detail::concat(q.source, ": ignore pattern '", m, "' is not a valid regex: ", e.what()));
    }
  }
  return q;
}

void apply_quantization_flag(QuantConfig& q, const std::string& flag) {
  if (flag.empty() || flag == "none") return;
  SEAM_CHECK(flag == "fp8", "--quantization: '", flag, "' is not one of fp8, none");
  if (q.method == QuantMethod::fp8) return;  // an FP8 checkpoint loads as it is (vLLM/sglang do the same)
  if (q.weight_only) {
    // A weight-only FP8 checkpoint (W8A16) with the flag: its stored FP8 weights run as FP8
    // layers (FP8 bytes and tensor cores) with dynamic activations, per token, or in 1x128 groups
    // for 128x128-block weights as the block formats do, instead of being dequantized to float at
    // load. The activations' quantization error is the price: without the flag the checkpoint
    // keeps W8A16's numerics (vLLM and sglang run W8A16 on Marlin kernels; seam has none).
    q.weight_only = false;
    q.act = q.weight == Fp8WeightScheme::block128 ? Fp8ActScheme::dynamic_group128 : Fp8ActScheme::dynamic_per_token;
    q.act_amax_ub = 0.f;
    q.source += " + --quantization fp8";
    return;
  }
  SEAM_CHECK(!q.quantized(), "--quantization fp8: the checkpoint is already quantized (", quant_method_name(q.method),
             ", ", q.source, "); drop the flag to load it as it is");
  q.method = QuantMethod::online_fp8;
  q.weight = Fp8WeightScheme::per_channel;
  q.act = Fp8ActScheme::dynamic_per_token;
  q.ignore = {"lm_head"};
  q.source = "--quantization";
}

}  // namespace seam
