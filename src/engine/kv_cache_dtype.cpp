#include "engine/kv_cache_dtype.h"

#include <vector>

#include "core/error.h"

namespace seam {

DType resolve_kv_cache_dtype(const std::string& flag, DType act, Device device) {
  if (flag.empty() || flag == "auto") return act;
  SEAM_CHECK(flag != "fp8_e5m2", "--kv-cache-dtype: fp8_e5m2 is not supported (use fp8_e4m3)");
  SEAM_CHECK(flag == "fp8_e4m3" || flag == "fp8", "--kv-cache-dtype: '", flag,
             "' is not one of auto, fp8_e4m3 (fp8)");
  SEAM_CHECK(device == Device::cpu, "--kv-cache-dtype ", flag,
             ": the cuda attention kernels do not read an FP8 KV cache yet (the cpu backend does)");
  return DType::fp8_e4m3;
}

void check_kv_cache_scales(DType kv_dtype, const Checkpoint& ck) {
  if (kv_dtype != DType::fp8_e4m3) return;
  for (const auto& [name, t] : ck.kv_scales) {
    std::vector<float> v(size_t(t.numel()));
    convert_to_f32(t.data, t.dtype, v.data(), v.size());
    SEAM_CHECK(v.size() == 1 && v[0] == 1.f, "--kv-cache-dtype fp8_e4m3: tensor '", name, "' is ", v.empty() ? 0.f : v[0],
               ", and KV cache scales other than 1.0 are not applied yet");
  }
}

}  // namespace seam
