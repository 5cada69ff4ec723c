#include "engine/kv_cache_dtype.h"

#include "core/error.h"

namespace seam {

DType resolve_kv_cache_dtype(const std::string& flag, DType act, Device device) {
  if (flag.empty() || flag == "auto") return act;
  SEAM_CHECK(flag != "fp8_e5m2", "--kv-cache-dtype: fp8_e5m2 is not supported (use fp8_e4m3)");
  SEAM_CHECK(flag == "fp8_e4m3" || flag == "fp8", "--kv-cache-dtype: '", flag,
             "' is not one of auto, fp8_e4m3 (fp8)");
  (void)act;
  (void)device;  // every backend's store_kv and attention kernels read and write E4M3 caches
  return DType::fp8_e4m3;
}

}  // namespace seam
