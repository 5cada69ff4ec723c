#include "backend/cuda/gemm_timer.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/l2_flush.h"

namespace seam::cuda {

GemmTimer::GemmTimer(cudaStream_t stream, void* flush, size_t flush_bytes)
    : stream_(stream), flush_(flush), flush_bytes_(flush_bytes) {
  start_.resize(kMaxReps);
  stop_.resize(kMaxReps);
  for (int i = 0; i < kMaxReps; ++i) {
    SEAM_CUDA_CHECK(cudaEventCreate(&start_[size_t(i)]));
    SEAM_CUDA_CHECK(cudaEventCreate(&stop_[size_t(i)]));
  }
}

GemmTimer::~GemmTimer() {
  for (cudaEvent_t e : start_)
    if (e) cudaEventDestroy(e);  // destructor: no throw
  for (cudaEvent_t e : stop_)
    if (e) cudaEventDestroy(e);
}

double GemmTimer::median_us(const GemmCall& call, const cublasLtMatmulAlgo_t& algo, const GemmTimingMethod& m) {
  SEAM_ASSERT(m.n_warmup >= 0 && m.n_reps >= 1 && m.n_reps <= kMaxReps, "GemmTimer: reps ", m.n_reps, " out of [1, ",
              kMaxReps, "]");
  const float alpha = 1.f, beta = 0.f;
  auto matmul = [&] {
    return cublasLtMatmul(call.handle, call.desc, &alpha, call.a_data, call.a, call.b_data, call.b, &beta,
                          call.d_data, call.c, call.d_data, call.c, &algo, call.workspace, call.workspace_bytes,
                          stream_);
  };
  auto flush = [&] {
    if (m.flush == L2Flush::read)
      launch_l2_flush(flush_, flush_bytes_, stream_);
    else
      SEAM_CUDA_CHECK(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_));
  };
  for (int i = 0; i < m.n_warmup; ++i) {
    flush();
    if (matmul() != CUBLAS_STATUS_SUCCESS) {
      cudaStreamSynchronize(stream_);
      cudaGetLastError();
      return -1;
    }
  }
  for (int i = 0; i < m.n_reps; ++i) {
    flush();
    SEAM_CUDA_CHECK(cudaEventRecord(start_[size_t(i)], stream_));
    const cublasStatus_t st = matmul();
    SEAM_CUDA_CHECK(cudaEventRecord(stop_[size_t(i)], stream_));
    if (st != CUBLAS_STATUS_SUCCESS) {
      cudaStreamSynchronize(stream_);
      cudaGetLastError();
      return -1;
    }
  }
  SEAM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<float> ms(size_t(m.n_reps));
  for (int i = 0; i < m.n_reps; ++i)
    SEAM_CUDA_CHECK(cudaEventElapsedTime(&ms[size_t(i)], start_[size_t(i)], stop_[size_t(i)]));
  std::nth_element(ms.begin(), ms.begin() + ptrdiff_t(ms.size() / 2), ms.end());
  return 1e3 * double(ms[ms.size() / 2]);
}

size_t l2_flush_bytes() {
  int dev = 0, l2 = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return std::max(size_t(256) << 20, size_t(4) * size_t(l2));
}

}  // namespace seam::cuda
