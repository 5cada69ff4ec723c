#include "backend/cuda/apply_penalties.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

// One block per row; threads stride over the row's entries.
__global__ void apply_penalties_kernel(float* logits, int64_t stride, int64_t vocab, const int32_t* indptr,
                                       const int32_t* tokens, const int32_t* out_counts, const float* frequency,
                                       const float* presence, const float* repetition) {
  pdl_begin();
  const int r = blockIdx.x;
  float* l = logits + r * stride;
  const float freq = frequency[r], pres = presence[r], rep = repetition[r];
  for (int32_t e = indptr[r] + int32_t(threadIdx.x); e < indptr[r + 1]; e += blockDim.x) {
    const int32_t tok = tokens[e];
    if (tok < 0 || tok >= vocab) continue;
    const int32_t count = out_counts[e];
    float v = l[tok];
    // HF repetition penalty: divide positive logits, multiply negative ones.
    if (rep != 1.f) v = v > 0 ? v / rep : v * rep;
    if (count > 0) v -= freq * float(count) + pres;
    l[tok] = v;
  }
}

}  // namespace

void launch_apply_penalties(const Tensor& logits, const PenaltyBatch& p, cudaStream_t stream) {
  if (p.n == 0) return;
  launch_kernel(apply_penalties_kernel, unsigned(p.n), 128, 0, stream, logits.ptr<float>(), logits.stride[0],
                logits.size(1), p.indptr.ptr<int32_t>(), p.tokens.ptr<int32_t>(), p.out_counts.ptr<int32_t>(),
                p.frequency.ptr<float>(), p.presence.ptr<float>(), p.repetition.ptr<float>());
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
