#include "backend/cuda/gemm_timer.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/l2_flush.h"

namespace seam::cuda {

GemmTimer::GemmTimer(cudaStream_t stream, void* flush, size_t flush_bytes)
    : stream_(stream), flush_(flush), flush_bytes_(flush_bytes) {}

GemmTimer::~GemmTimer() {
  for (cudaEvent_t e : start_)
    if (e) cudaEventDestroy(e);  // destructor: no throw
  for (cudaEvent_t e : stop_)
    if (e) cudaEventDestroy(e);
}

void GemmTimer::reserve_events(size_t n) {
  while (start_.size() < n) {  // host-side events, start-up and tools only
    cudaEvent_t a = nullptr, b = nullptr;
    SEAM_CUDA_CHECK(cudaEventCreate(&a));
    start_.push_back(a);
    SEAM_CUDA_CHECK(cudaEventCreate(&b));
    stop_.push_back(b);
  }
}

double GemmTimer::median_us(const GemmCall& call, const cublasLtMatmulAlgo_t& algo, const GemmTimingMethod& m) {
  return medians_us(call, {algo}, m)[0];
}

std::vector<double> GemmTimer::medians_us(const GemmCall& call, const std::vector<cublasLtMatmulAlgo_t>& algos,
                                          const GemmTimingMethod& m) {
  SEAM_ASSERT(m.n_warmup >= 0 && m.n_reps >= 1 && m.n_reps <= kMaxReps, "GemmTimer: reps ", m.n_reps, " out of [1, ",
              kMaxReps, "]");
  const size_t n = algos.size();
  reserve_events(n);
  const float alpha = 1.f, beta = 0.f;
  auto matmul = [&](size_t i) {
    return cublasLtMatmul(call.handle, call.desc, &alpha, call.a_data, call.a, call.b_data, call.b, &beta,
                          call.d_data, call.c, call.d_data, call.c, &algos[i], call.workspace, call.workspace_bytes,
                          stream_);
  };
  auto flush = [&] {
    if (m.flush == L2Flush::read)
      launch_l2_flush(flush_, flush_bytes_, stream_);
    else
      SEAM_CUDA_CHECK(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_));
  };
  std::vector<bool> refused(n, false);
  auto refuse = [&](size_t i) {  // cuBLASLt would not run it: clear the error, leave it out
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
    refused[i] = true;
  };
  for (int w = 0; w < m.n_warmup; ++w)
    for (size_t i = 0; i < n; ++i) {
      if (refused[i]) continue;
      flush();
      if (matmul(i) != CUBLAS_STATUS_SUCCESS) refuse(i);
    }
  std::vector<std::vector<float>> ms(n);
  for (int r = 0; r < m.n_reps; ++r) {
    for (size_t i = 0; i < n; ++i) {
      if (refused[i]) continue;
      flush();
      SEAM_CUDA_CHECK(cudaEventRecord(start_[i], stream_));
      const cublasStatus_t st = matmul(i);
      SEAM_CUDA_CHECK(cudaEventRecord(stop_[i], stream_));
      if (st != CUBLAS_STATUS_SUCCESS) refuse(i);
    }
    SEAM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (size_t i = 0; i < n; ++i) {
      if (refused[i]) continue;
      float t = 0;
      SEAM_CUDA_CHECK(cudaEventElapsedTime(&t, start_[i], stop_[i]));
      ms[i].push_back(t);
    }
  }
  std::vector<double> us(n, -1.0);
  for (size_t i = 0; i < n; ++i) {
    if (refused[i] || ms[i].empty()) continue;
    std::nth_element(ms[i].begin(), ms[i].begin() + ptrdiff_t(ms[i].size() / 2), ms[i].end());
    us[i] = 1e3 * double(ms[i][ms[i].size() / 2]);
  }
  return us;
}

size_t l2_flush_bytes() {
  int dev = 0, l2 = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return std::max(size_t(256) << 20, size_t(4) * size_t(l2));
}

}  // namespace seam::cuda
