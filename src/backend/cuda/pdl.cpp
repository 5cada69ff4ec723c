// pdl_enabled(): whether launch_kernel asks for programmatic dependent launch
// (cuda_common.cuh explains the scheme).
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"

namespace seam::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("SEAM_CUDA_PDL");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    int dev = 0, major = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    return major >= 9;
  }();
  return enabled;
}

}  // namespace seam::cuda
