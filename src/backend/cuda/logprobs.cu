// One block per row. A row that asks for nothing (k < 0) exits after reading its flag,
// so a batch where few rows ask costs little more than those rows. A row that asks:
// one pass for the max, one for sum(exp(x - max)), then k <= 20 arg-max passes, each
// taking the best (value, id) strictly after the previous pick in the order (value
// descending, id ascending). The passes re-read a row that stays in L2 (a 128K vocab
// row is 512 KB); a radix select is not worth it at k <= 20. Every reduction has a
// fixed order, so the result is deterministic.
#include "backend/cuda/logprobs.h"

#include <cfloat>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ bool before(float va, int ia, float vb, int ib) {
  return va > vb || (va == vb && ia < ib);
}

__device__ float block_max(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < kWarps; ++w) v = fmaxf(v, scratch[w]);
  return v;
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < kWarps; ++w) v += scratch[w];
  return v;
}

// The block's best (v, i) by `before`; i = -1 when no thread has a candidate.
__device__ void block_best(float& v, int& i, float* sv, int* si) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && (i < 0 || before(ov, oi, v, i))) v = ov, i = oi;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sv[threadIdx.x >> 5] = v, si[threadIdx.x >> 5] = i;
  __syncthreads();
  v = sv[0], i = si[0];
  for (int w = 1; w < kWarps; ++w)
    if (si[w] >= 0 && (i < 0 || before(sv[w], si[w], v, i))) v = sv[w], i = si[w];
}

__global__ void __launch_bounds__(kThreads)
    logprobs_kernel(const float* logits, int64_t stride, int vocab, const int32_t* ks, const int32_t* sampled,
                    float* out_sampled, int32_t* out_top_ids, float* out_top, int max_top) {
  pdl_begin();
  const int r = blockIdx.x;
  const int k = min(ks[r], max_top);
  if (k < 0) return;
  __shared__ float sv[kWarps];
  __shared__ int si[kWarps];
  const float* l = logits + r * stride;
  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < vocab; i += kThreads) m = fmaxf(m, l[i]);
  m = block_max(m, sv);
  float s = 0.f;
  for (int i = threadIdx.x; i < vocab; i += kThreads) s += expf(l[i] - m);
  const float log_sum = logf(block_sum(s, sv));
  const int32_t t = sampled[r];
  if (threadIdx.x == 0 && t >= 0 && t < vocab) out_sampled[r] = (l[t] - m) - log_sum;
  float prev_v = FLT_MAX;
  int prev_i = -1;
  for (int j = 0; j < min(k, vocab); ++j) {
    float bv = 0.f;
    int bi = -1;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = l[i];
      const bool after_prev = prev_i < 0 ? true : before(prev_v, prev_i, v, i);
      if (after_prev && (bi < 0 || before(v, i, bv, bi))) bv = v, bi = i;
    }
    block_best(bv, bi, sv, si);
    if (bi < 0) break;
    if (threadIdx.x == 0) {
      out_top_ids[int64_t(r) * max_top + j] = bi;
      out_top[int64_t(r) * max_top + j] = (bv - m) - log_sum;
    }
    prev_v = bv, prev_i = bi;
  }
}

}  // namespace

void launch_logprobs(const Tensor& logits, const LogprobBatch& b, cudaStream_t stream) {
  if (b.n == 0) return;
  launch_kernel(logprobs_kernel, unsigned(b.n), kThreads, 0, stream, logits.ptr<float>(), logits.stride[0],
                int(logits.size(1)), b.k.ptr<int32_t>(), b.sampled.ptr<int32_t>(), b.out_sampled.ptr<float>(),
                b.out_top_ids.ptr<int32_t>(), b.out_top.ptr<float>(), int(b.out_top.size(1)));
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
