#include "model/kv_cache_scales.h"

#include "core/dtype.h"
#include "core/error.h"

namespace seam {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The layer index of "....layers.<i>.<...>", or -1.
int layer_of(const std::string& name) {
  const std::string key = "layers.";
  const size_t at = name.find(key);
  if (at == std::string::npos) return -1;
  size_t i = at + key.size();
  int layer = 0, digits = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 9; ++i, ++digits) layer = layer * 10 + (name[i] - '0');
  return digits > 0 && i < name.size() && name[i] == '.' ? layer : -1;
}

}  // namespace

std::vector<KvScales> kv_cache_scales(const std::map<std::string, HostTensor>& scales, int n_layers) {
  std::vector<KvScales> out(static_cast<size_t>(n_layers));
  std::map<std::pair<int, bool>, std::string> seen;  // (layer, is_k) -> tensor name
  for (const auto& [name, t] : scales) {
    const bool is_k = ends_with(name, ".k_scale");
    SEAM_CHECK(is_k || ends_with(name, ".v_scale"), "tensor '", name, "' is not a k_scale / v_scale tensor");
    const int layer = layer_of(name);
    SEAM_CHECK(layer >= 0 && layer < n_layers, "tensor '", name, "': a KV cache scale must name a layer in [0, ",
               n_layers, ") ('model.layers.<i>.self_attn....')");
    const auto [it, fresh] = seen.emplace(std::make_pair(layer, is_k), name);
    SEAM_CHECK(fresh, "tensors '", it->second, "' and '", name, "' both give layer ", layer, "'s ",
               is_k ? "k" : "v", " cache scale");
    SEAM_CHECK(t.numel() == 1, "tensor '", name, "': a KV cache scale is one value");
    float v = 0.f;
    convert_to_f32(t.data, t.dtype, &v, 1);
    // fp8_checkpoint.cpp checked it finite and positive.
    (is_k ? out[size_t(layer)].k : out[size_t(layer)].v) = v;
  }
  return out;
}

}  // namespace seam
