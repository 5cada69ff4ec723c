#include "backend/cuda/apply_token_bitmask.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 256;

// Grid: (chunks of kThreads * 4 tokens, masked rows). A warp's 32 consecutive tokens share one
// 32-bit word (chunks and passes start on word boundaries), so a warp reads one word per pass
// and writes only the forbidden logits.
__global__ void __launch_bounds__(kThreads) apply_token_bitmask_kernel(float* logits, int64_t stride, int64_t vocab,
                                                                       const uint32_t* bitmask, int64_t n_words,
                                                                       const int32_t* rows) {
  pdl_begin();
  const int i = blockIdx.y;
  float* l = logits + int64_t(rows[i]) * stride;
  const uint32_t* words = bitmask + int64_t(i) * n_words;
  const int64_t begin = int64_t(blockIdx.x) * kThreads * 4;
  for (int k = 0; k < 4; ++k) {
    const int64_t t = begin + int64_t(k) * kThreads + threadIdx.x;
    if (t < vocab && !((words[t >> 5] >> (t & 31)) & 1u)) l[t] = -INFINITY;
  }
}

}  // namespace

void launch_apply_token_bitmask(const Tensor& logits, const Tensor& bitmask, const Tensor& rows,
                                cudaStream_t stream) {
  const int64_t n_masked = bitmask.size(0), vocab = logits.size(1);
  if (n_masked == 0 || vocab == 0) return;
  const dim3 grid(unsigned((vocab + kThreads * 4 - 1) / (kThreads * 4)), unsigned(n_masked));
  launch_kernel(apply_token_bitmask_kernel, grid, dim3(kThreads), 0, stream, logits.ptr<float>(), logits.stride[0],
                vocab, reinterpret_cast<const uint32_t*>(bitmask.ptr<int32_t>()), bitmask.size(1),
                rows.ptr<int32_t>());
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
