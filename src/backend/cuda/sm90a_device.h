// Whether the current device runs this build's sm_90a code (wgmma, TMA, setmaxnreg): arch-specific
// sm_90a code runs only on compute capability 9.0 exactly. Asked of the device at each call; the
// *_applies functions of the wgmma kernels cache it once per process.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"

namespace seam::cuda {

inline bool current_device_is_sm90() {
  int dev = 0, major = 0, minor = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return major == 9 && minor == 0;
}

}  // namespace seam::cuda
