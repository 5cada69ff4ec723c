// FP8 mixture-of-experts folders for the tests (header-only: the CPU test and the GPU test
// include it): the tiny transformers-made MoE models of tests/data/hf_tiny written in an FP8
// format by model/fp8_export, and variants of such a folder made by rewriting its tensors —
// the experts as float32 values of their dequantization (written out here from the definition,
// apart from model/fp8_dequant.cpp), or every other FP8 linear so (only the experts FP8).
#pragma once
#include <algorithm>
#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/fp8.h"
#include "model/fp8_export.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam::test {

// The folders this binary made, removed when it ends.
inline std::vector<std::string>& made_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
struct RemoveMadeDirs : ::testing::Environment {
  void TearDown() override {
    for (const auto& d : made_dirs()) std::filesystem::remove_all(d);
  }
};
[[maybe_unused]] inline auto* const kRemoveMadeDirs = ::testing::AddGlobalTestEnvironment(new RemoveMadeDirs);

inline std::string hf_tiny(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

inline std::string fresh_dir(const std::string& tag) {
  const std::string dir = make_temp_dir(tag);
  made_dirs().push_back(dir);
  return dir;
}

// tests/data/hf_tiny/`model` in format `f`.
inline std::string export_moe(const std::string& model, Fp8ExportFormat f) {
  const std::string dir = fresh_dir("fp8moe");
  export_fp8_checkpoint(hf_tiny(model), dir, Fp8ExportOptions{f});
  return dir;
}

inline bool is_expert(const std::string& name) {
  static const std::regex re(R"(.*(mlp\.experts\.\d+\.(gate|up|down)_proj|block_sparse_moe\.experts\.\d+\.w[123])\.weight)");
  return std::regex_match(name, re);
}

inline const StTensor* find(const std::vector<StTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

inline std::vector<float> floats_of(const StTensor& t) {
  std::vector<float> v(size_t(numel_of(t.shape)));
  const DType d = t.dtype == "F32" ? DType::f32 : t.dtype == "BF16" ? DType::bf16 : DType::f16;
  convert_to_f32(t.bytes.data(), d, v.data(), v.size());
  return v;
}

// The dequantized value of element (o, k) written out from the definition: the float32 product
// of the code's value and its scale, the scale looked up by the scale tensor's own shape (one
// value, one a row, or one a 128 x 128 block).
inline std::vector<float> dequantized(const StTensor& codes, const std::vector<float>& scale,
                                      const std::vector<int64_t>& s_shape) {
  const int64_t n_out = codes.shape[0], n_in = codes.shape[1];
  std::vector<float> out(size_t(n_out * n_in));
  for (int64_t o = 0; o < n_out; ++o)
    for (int64_t k = 0; k < n_in; ++k) {
      float s;
      if (scale.size() == 1) s = scale[0];
      else if (int64_t(scale.size()) == n_out && (s_shape.size() == 1 || s_shape[1] == 1)) s = scale[size_t(o)];
      else s = scale[size_t((o / 128) * s_shape[1] + k / 128)];
      out[size_t(o * n_in + k)] = fp8_e4m3_to_f32(uint8_t(codes.bytes[size_t(o * n_in + k)])) * s;
    }
  return out;
}

// A copy of the FP8 folder `dir` where each F8_E4M3 linear weight that `which` selects is a
// float32 tensor of its dequantized values, its scales (`scale_name`, input_scale) dropped.
inline std::string with_float_weights(const std::string& dir, const std::string& scale_name,
                                      const std::function<bool(const std::string&)>& which) {
  const std::string out = fresh_dir("fp8moe_var");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    std::filesystem::copy_file(e.path(), out + "/" + e.path().filename().string(),
                               std::filesystem::copy_options::overwrite_existing);
  edit_model_tensors(out, [&](std::vector<StTensor>& ts) {
    const std::vector<StTensor> in = ts;
    ts.clear();
    for (const StTensor& t : in) {
      const std::string module = t.name.substr(0, t.name.rfind('.'));  // "...experts.3.up_proj"
      const StTensor* w = find(in, module + ".weight");
      const bool selected = w && w->dtype == "F8_E4M3" && which(w->name);
      if (selected && (t.name == module + "." + scale_name || t.name == module + ".input_scale")) continue;
      if (!selected || t.name != module + ".weight") {
        ts.push_back(t);
        continue;
      }
      const StTensor* s = find(in, module + "." + scale_name);
      EXPECT_NE(s, nullptr) << t.name;
      if (!s) continue;
      const std::vector<float> v = dequantized(t, floats_of(*s), s->shape);
      ts.push_back({t.name, "F32", t.shape, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)});
    }
  });
  return out;
}

// The experts as float32 values of their dequantization; the rest of the model as it is.
inline std::string with_float_experts(const std::string& dir, const std::string& scale_name) {
  return with_float_weights(dir, scale_name, is_expert);
}

// Every FP8 linear as float32 values of its dequantization and no quantization config: the float
// model a weight-only FP8 folder (`scale_name` "weight_scale": compressed-tensors, ModelOpt) defines.
inline std::string with_all_float(const std::string& dir, const std::string& scale_name = "weight_scale") {
  const std::string out = with_float_weights(dir, scale_name, [](const std::string&) { return true; });
  nlohmann::json cfg = nlohmann::json::parse(read_file(out + "/config.json"));
  cfg.erase("quantization_config");
  write_file(out + "/config.json", cfg.dump(2));
  std::filesystem::remove(out + "/hf_quant_config.json");  // ModelOpt's
  return out;
}

// Only the experts FP8: every other FP8 linear as float32 values of its dequantization, listed in
// the compressed-tensors ignore list (a compressed-tensors folder: `dir` from a ct-* format).
inline std::string with_only_experts_fp8(const std::string& dir) {
  const std::string out = with_float_weights(dir, "weight_scale", [](const std::string& n) { return !is_expert(n); });
  nlohmann::json cfg = nlohmann::json::parse(read_file(out + "/config.json"));
  auto& ignore = cfg["quantization_config"]["ignore"];
  ignore.push_back("re:.*self_attn[.](q|k|v|o)_proj");
  ignore.push_back("re:.*mlp[.](gate|up|down)_proj");
  ignore.push_back("re:.*shared_expert[.](gate|up|down)_proj");
  write_file(out + "/config.json", cfg.dump(2));
  return out;
}

}  // namespace seam::test
