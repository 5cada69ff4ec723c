#include "model/fp8_export.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fp8.h"
#include "core/parallel_rows.h"
#include "model/json_file.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace seam {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct OutTensor {
  std::string name, dtype;  // safetensors spelling
  std::vector<int64_t> shape;
  std::string bytes;
};

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

const char* st_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    default: break;
  }
  throw Error("quantize-fp8: the source checkpoint must hold F32, F16 or BF16 tensors, got " + dtype_name(t));
}

void write_safetensors(const std::string& path, const std::vector<OutTensor>& tensors) {
  json h = json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string header = h.dump();
  while (header.size() % 8) header.push_back(' ');
  std::ofstream f(path, std::ios::binary);
  SEAM_CHECK(f.good(), path, ": cannot write");
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(char((n >> (8 * i)) & 0xff));
  f << header;
  for (const auto& t : tensors) f.write(t.bytes.data(), std::streamsize(t.bytes.size()));
  SEAM_CHECK(f.good(), path, ": write failed");
}

float scale_of(float amax) { return amax > 0.f ? amax / kFp8E4m3Max : 1.f; }

// Quantizes w [n_out, n_in] with one scale per (row block, column block) of the given sizes:
// (n_out, n_in) = per-tensor, (1, n_in) = per-channel, (128, 128) = blocks.
void quantize(const std::vector<float>& w, int64_t n_out, int64_t n_in, int64_t br, int64_t bc, std::string& codes,
              std::vector<float>& scales) {
  const int64_t nr = (n_out + br - 1) / br, nc = (n_in + bc - 1) / bc;
  scales.assign(size_t(nr * nc), 0.f);
  codes.assign(size_t(n_out * n_in), '\0');
  // Each row's amax per column block (rows over threads), then each block's: a max is exact in
  // any order, so the scales are the sequential loop's.
  std::vector<float> row_amax(size_t(n_out * nc), 0.f);
  constexpr int64_t kRowsPerThread = 64;
  parallel_rows(n_out, kRowsPerThread, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      for (int64_t c = 0; c < nc; ++c) {
        float amax = 0.f;
        for (int64_t k = c * bc; k < std::min(n_in, (c + 1) * bc); ++k) amax = std::max(amax, std::fabs(w[size_t(o * n_in + k)]));
        row_amax[size_t(o * nc + c)] = amax;
      }
  });
  for (int64_t o = 0; o < n_out; ++o)
    for (int64_t c = 0; c < nc; ++c) {
      float& a = scales[size_t((o / br) * nc + c)];
      a = std::max(a, row_amax[size_t(o * nc + c)]);
    }
  for (float& s : scales) s = scale_of(s);
  parallel_rows(n_out, kRowsPerThread, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      for (int64_t k = 0; k < n_in; ++k)
        codes[size_t(o * n_in + k)] = char(f32_to_fp8_e4m3(w[size_t(o * n_in + k)] / scales[size_t((o / br) * nc + k / bc)]));
  });
}

// compressed-tensors recipes list a mixture-of-experts model's routers in the ignore list.
json compressed_tensors_config(const std::string& w_strategy, const json& act, bool moe) {
  json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", w_strategy}, {"symmetric", true},
                  {"dynamic", false}};
  if (w_strategy == "block") weights["block_structure"] = {128, 128};
  return {{"quant_method", "compressed-tensors"},
          {"format", "float-quantized"},
          {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", act}}}}},
          {"ignore", moe ? json::array({"lm_head", "re:.*mlp[.]gate$", "re:.*block_sparse_moe[.]gate$",
                                        "re:.*shared_expert_gate$"})
                         : json::array({"lm_head"})}};
}

}  // namespace

const std::vector<std::pair<std::string, Fp8ExportFormat>>& fp8_export_formats() {
  static const std::vector<std::pair<std::string, Fp8ExportFormat>> k = {
      {"ct-channel", Fp8ExportFormat::ct_channel}, {"ct-tensor-static", Fp8ExportFormat::ct_tensor_static},
      {"ct-block", Fp8ExportFormat::ct_block},     {"fp8-block", Fp8ExportFormat::fp8_block},
      {"fp8-tensor", Fp8ExportFormat::fp8_tensor}, {"fbgemm", Fp8ExportFormat::fbgemm},
      {"modelopt", Fp8ExportFormat::modelopt},     {"modelopt-channel", Fp8ExportFormat::modelopt_channel},
      {"ct-w8a16", Fp8ExportFormat::ct_w8a16},     {"modelopt-pb-wo", Fp8ExportFormat::modelopt_pb_wo}};
  return k;
}

void export_fp8_checkpoint(const std::string& src_dir, const std::string& dst_dir, const Fp8ExportOptions& opt) {
  const ModelConfig mc = load_model_config(src_dir);
  SEAM_CHECK(!mc.quant.quantized(), "quantize-fp8: ", src_dir, " is already quantized (",
             quant_method_name(mc.quant.method), ")");
  SEAM_CHECK(std::isfinite(opt.input_scale) && opt.input_scale > 0.f, "quantize-fp8: --input-scale must be positive");
  const fs::path src(src_dir), dst(dst_dir);
  std::error_code ec;
  SEAM_CHECK(fs::exists(src / "model.safetensors", ec), "quantize-fp8: ", (src / "model.safetensors").string(),
             ": file not found (a single-file checkpoint is needed)");
  auto file = SafetensorsFile::open((src / "model.safetensors").string());
  fs::create_directories(dst, ec);
  SEAM_CHECK(!ec, dst_dir, ": cannot create: ", ec.message());

  using F = Fp8ExportFormat;
  const F fmt = opt.format;
  int64_t br = 1, bc = 0;  // bc == 0: the whole row
  bool per_tensor = false, static_act = false;
  std::string scale_name = "weight_scale";
  switch (fmt) {
    case F::ct_channel: case F::fbgemm: case F::modelopt_channel: case F::ct_w8a16: break;
    case F::ct_tensor_static: case F::modelopt: per_tensor = static_act = true; break;
    case F::fp8_tensor: per_tensor = true; break;
    case F::ct_block: case F::modelopt_pb_wo: br = bc = 128; break;
    case F::fp8_block: br = bc = 128; scale_name = "weight_scale_inv"; break;
  }
  // The decoder's linears: attention, a dense MLP (Phi-3's fused qkv_proj / gate_up_proj as one
  // tensor each, with the stored tensor's scales), and a mixture-of-experts layer's experts
  // (Qwen-MoE experts.<e>.gate_proj ..., Mixtral's block_sparse_moe.experts.<e>.w1 / w2 / w3) and
  // shared expert, as publishers quantize them; the router (mlp.gate, block_sparse_moe.gate) and
  // Qwen2-MoE's shared_expert_gate stay float, as the publishers' tools leave them.
  const std::regex linear_re(
      R"(model\.layers\.\d+\.(self_attn\.(q|k|v|o|qkv)_proj|mlp\.(gate|up|down|gate_up)_proj|)"
      R"(mlp\.experts\.\d+\.(gate|up|down)_proj|)"
      R"(mlp\.shared_expert\.(gate|up|down)_proj|block_sparse_moe\.experts\.\d+\.w[123])\.weight)");

  std::vector<OutTensor> out;
  for (const std::string& name : file->tensor_names()) {
    const HostTensor t = file->tensor(name);
    if (!std::regex_match(name, linear_re)) {
      out.push_back({name, st_dtype(t.dtype), t.shape,
                     std::string(static_cast<const char*>(t.data), size_t(t.numel()) * dtype_size(t.dtype))});
      continue;
    }
    const int64_t n_out = t.shape[0], n_in = t.shape[1];
    std::vector<float> w(size_t(t.numel()));
    parallel_rows(n_out, 64, [&](int64_t begin, int64_t end) {
      convert_to_f32(static_cast<const char*>(t.data) + begin * n_in * int64_t(dtype_size(t.dtype)), t.dtype,
                     w.data() + begin * n_in, size_t((end - begin) * n_in));
    });
    OutTensor q{name, "F8_E4M3", t.shape, {}};
    std::vector<float> scales;
    quantize(w, n_out, n_in, per_tensor ? n_out : br, per_tensor ? n_in : (bc ? bc : n_in), q.bytes, scales);
    const std::string module = name.substr(0, name.size() - 7);
    std::vector<int64_t> s_shape;
    if (per_tensor) s_shape = fmt == F::modelopt ? std::vector<int64_t>{} : std::vector<int64_t>{1};
    else if (bc) s_shape = {(n_out + 127) / 128, (n_in + 127) / 128};
    else s_shape = fmt == F::modelopt_channel ? std::vector<int64_t>{n_out} : std::vector<int64_t>{n_out, 1};
    out.push_back(std::move(q));
    out.push_back({module + "." + scale_name, "F32", s_shape, f32_bytes(scales)});
    if (static_act)
      out.push_back({module + ".input_scale", "F32", fmt == F::modelopt ? std::vector<int64_t>{} : std::vector<int64_t>{1},
                     f32_bytes({opt.input_scale})});
    // ModelOpt with an FP8 KV cache stores per-layer k/v scales on k_proj / v_proj.
    if (fmt == F::modelopt && (name.find(".k_proj.") != std::string::npos || name.find(".v_proj.") != std::string::npos))
      out.push_back({module + (name.find(".k_proj.") != std::string::npos ? ".k_scale" : ".v_scale"), "F32", {},
                     f32_bytes({1.f})});
  }
  write_safetensors((dst / "model.safetensors").string(), out);

  json config = read_json_file((src / "config.json").string(), "config.json");
  const bool moe = mc.moe.enabled();
  switch (fmt) {
    case F::ct_channel:
      config["quantization_config"] = compressed_tensors_config(
          "channel", {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}, {"symmetric", true}},
          moe);
      break;
    case F::ct_w8a16:  // llm-compressor's FP8 weight-only scheme: no input_activations
      config["quantization_config"] = compressed_tensors_config("channel", nullptr, moe);
      break;
    case F::ct_tensor_static:
      config["quantization_config"] = compressed_tensors_config(
          "tensor", {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false}, {"symmetric", true}},
          moe);
      break;
    case F::ct_block:
      config["quantization_config"] =
          compressed_tensors_config("block", {{"num_bits", 8}, {"type", "float"}, {"strategy", "group"},
                                              {"group_size", 128}, {"dynamic", true}, {"symmetric", true}},
                                    moe);
      break;
    case F::fp8_block:
      config["quantization_config"] = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                       {"weight_block_size", {128, 128}}};
      break;
    case F::fp8_tensor:
      config["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
      break;
    case F::fbgemm:
      config["quantization_config"] = {{"quant_method", "fbgemm_fp8"}, {"activation_scale_ub", 1200.0},
                                       {"modules_to_not_convert", {"lm_head"}}};
      break;
    case F::modelopt: {
      const json hq = {{"producer", {{"name", "modelopt"}, {"version", "0.19.0"}}},
                       {"quantization",
                        {{"quant_algo", "FP8"}, {"kv_cache_quant_algo", "FP8"}, {"exclude_modules", {"lm_head"}}}}};
      std::ofstream((dst / "hf_quant_config.json").string()) << hq.dump(2);
      break;
    }
    case F::modelopt_pb_wo: {
      const json hq = {{"producer", {{"name", "modelopt"}, {"version", "0.37.0"}}},
                       {"quantization", {{"quant_algo", "FP8_PB_WO"}, {"exclude_modules", {"lm_head"}}}}};
      std::ofstream((dst / "hf_quant_config.json").string()) << hq.dump(2);
      break;
    }
    case F::modelopt_channel: {
      const json hq = {{"producer", {{"name", "modelopt"}, {"version", "0.29.0"}}},
                       {"quantization", {{"quant_algo", "FP8_PER_CHANNEL_PER_TOKEN"}, {"exclude_modules", {"lm_head"}}}}};
      std::ofstream((dst / "hf_quant_config.json").string()) << hq.dump(2);
      break;
    }
  }
  // Every other file of the folder (tokenizer, generation config, chat template) as it is.
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n == "model.safetensors" || n == "config.json" || n == "hf_quant_config.json") continue;
    fs::copy_file(e.path(), dst / n, fs::copy_options::overwrite_existing, ec);
    SEAM_CHECK(!ec, (dst / n).string(), ": cannot copy: ", ec.message());
    fs::permissions(dst / n, fs::perms::owner_write, fs::perm_options::add, ec);  // sources may be read-only
  }
  std::ofstream cf((dst / "config.json").string());
  cf << config.dump(2);
  SEAM_CHECK(cf.good(), (dst / "config.json").string(), ": cannot write");
}

}  // namespace seam
