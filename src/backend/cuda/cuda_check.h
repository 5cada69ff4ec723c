// Checked CUDA and cuBLAS calls: every call's status is tested, and a failure
// throws seam::DeviceError naming the file, the line and the call that failed.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.h"

namespace seam::cuda_detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  throw DeviceError(detail::concat(file, ":", line, ": CUDA call '", call, "' failed: ", cudaGetErrorName(e), " (",
                             cudaGetErrorString(e), ")"));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  throw DeviceError(detail::concat(file, ":", line, ": cuBLAS call '", call, "' failed: status ", int(s), " (",
                             cublasLtGetStatusName(s), ")"));
}

}  // namespace seam::cuda_detail

#define SEAM_CUDA_CHECK(call)                                                          \
  do {                                                                                 \
    cudaError_t seam_e_ = (call);                                                      \
    if (seam_e_ != cudaSuccess)                                                        \
      ::seam::cuda_detail::throw_cuda_error(seam_e_, #call, __FILE__, __LINE__);       \
  } while (0)

#define SEAM_CUBLAS_CHECK(call)                                                        \
  do {                                                                                 \
    cublasStatus_t seam_s_ = (call);                                                   \
    if (seam_s_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::seam::cuda_detail::throw_cublas_error(seam_s_, #call, __FILE__, __LINE__);     \
  } while (0)

// After a kernel launch: catches bad launch configurations at the launch site.
#define SEAM_CUDA_CHECK_LAUNCH() SEAM_CUDA_CHECK(cudaGetLastError())
