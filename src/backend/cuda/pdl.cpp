// pdl_enabled(): whether launch_kernel asks for programmatic dependent launch
// (cuda_common.cuh explains the scheme).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/diagnostic_switch.h"

namespace seam::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    if (env_choice("SEAM_CUDA_PDL", 1, {0, 1}) == 0) return false;
    int dev = 0, major = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    return major >= 9;
  }();
  return enabled;
}

}  // namespace seam::cuda
