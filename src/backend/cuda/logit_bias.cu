#include "backend/cuda/logit_bias.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

// One block per row; threads stride over the row's entries (a request's token ids are
// distinct, so no two threads write one logit).
__global__ void logit_bias_kernel(float* logits, int64_t stride, int64_t vocab, const int32_t* indptr,
                                  const int32_t* tokens, const float* values) {
  pdl_begin();
  const int r = blockIdx.x;
  float* l = logits + r * stride;
  for (int32_t e = indptr[r] + int32_t(threadIdx.x); e < indptr[r + 1]; e += blockDim.x) {
    const int32_t tok = tokens[e];
    if (tok >= 0 && tok < vocab) l[tok] += values[e];
  }
}

}  // namespace

void launch_apply_logit_bias(const Tensor& logits, const LogitBiasBatch& b, cudaStream_t stream) {
  if (b.n == 0) return;
  launch_kernel(logit_bias_kernel, unsigned(b.n), 128, 0, stream, logits.ptr<float>(), logits.stride[0],
                logits.size(1), b.indptr.ptr<int32_t>(), b.tokens.ptr<int32_t>(), b.values.ptr<float>());
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
