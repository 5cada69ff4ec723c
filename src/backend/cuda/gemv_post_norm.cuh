// The tail of the batch-1 GEMV's post-norm kernel (gemv.cu, GemvFusion::post_norm): Gemma's
// post-attention / post-feed-forward RMSNorm applied to the projection's output row and added to
// the residual by the last of the grid's blocks to finish. Included by gemv.cu only.
#pragma once
#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// Called by every thread of every block (256 threads, as rms_norm_add_kernel) once the block's
// share of out [d] is written: residual [d] += rms_norm(out) * weight (eps), by the last block to
// arrive, exactly as rms_norm_add_kernel computes it. *counter is zero before the launch and left
// zero after it.
//
// The grid-wide "last block done" pattern: the block meets, and one thread fences and counts
// the block in; the block that counts gridDim.x reads the whole row back (every other block's
// writes are visible: their fences precede their counts, and this block's fence follows its
// count) and applies the norm. It sets the counter back to 0 once all have counted, so the next
// launch (a graph replay) finds it zero. No block waits on another, so any grid size is safe
// however few blocks are resident. PDL: the caller has passed pdl_begin's griddepcontrol.wait
// before it writes out, and the next kernel's wait covers this whole grid, the last block's
// residual writes included.
template <typename T>
__device__ __forceinline__ void post_norm_tail(const T* out, T* residual, const T* weight, float eps, int d,
                                               unsigned* counter) {
  __shared__ float scratch[32];
  __shared__ bool last;
  // Cooperative groups' grid barrier pattern: the block's barrier orders every thread's out
  // writes before thread 0's fence (cumulative at GPU scope), and the fence before its count.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const bool is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (is_last) {
      *counter = 0u;     // every block has counted in: zero for the next launch
      __threadfence();  // the others' writes before this block's reads (the barrier passes it on)
    }
    last = is_last;
  }
  __syncthreads();
  if (!last) return;  // block-uniform
  // rms_norm_add_kernel's two passes over the row (each thread's vectors j = threadIdx.x * V +
  // k * 256 V in order, one block_sum) with its arithmetic. A thread's first kHeld vectors of out,
  // of the weight and of the residual are all loaded at once and held, raw: 4,096 elements at 16
  // bits (Gemma 3 4B's 2,560, Gemma 2 9B's 3,584) in one round trip. Any further ones are read
  // again in the second pass, as rms_norm_add does. kHeld = 3 took the bf16 kernels to 98-100
  // registers (half the blocks per SM of the GEMV); at 2 they use <= 64, the plain paired
  // GEMV's count (4 blocks of 256 threads per SM either way), with no spills.
  constexpr int V = kVec<T>, kHeld = 2;
  const int stride = int(blockDim.x) * V, first = int(threadIdx.x) * V;
  const uint4* xr = reinterpret_cast<const uint4*>(out);  // __ldcg: L2, where the other blocks wrote it
  uint4 xv[kHeld], wv[kHeld], rv[kHeld];
#pragma unroll
  for (int k = 0; k < kHeld; ++k) {
    const int j = first + k * stride;
    if (j < d) {
      xv[k] = __ldcg(xr + j / V);
      wv[k] = *reinterpret_cast<const uint4*>(weight + j);
      rv[k] = *reinterpret_cast<const uint4*>(residual + j);
    }
  }
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < kHeld; ++k) {
    if (first + k * stride >= d) break;
    float v[V];
    unpack_vec<T>(xv[k], v);
#pragma unroll
    for (int i = 0; i < V; ++i) ss += v[i] * v[i];
  }
  for (int j = first + kHeld * stride; j < d; j += stride) {
    float v[V];
    unpack_vec<T>(__ldcg(xr + j / V), v);
#pragma unroll
    for (int i = 0; i < V; ++i) ss += v[i] * v[i];
  }
  ss = block_sum(ss, scratch);
  const float scale = 1.f / sqrtf(ss / float(d) + eps);
  auto add = [&](int j, const uint4& x_raw, const uint4& w_raw, const uint4& r_raw) {
    float v[V], w[V], r[V];
    unpack_vec<T>(x_raw, v);
    unpack_vec<T>(w_raw, w);
    unpack_vec<T>(r_raw, r);
#pragma unroll
    for (int i = 0; i < V; ++i) r[i] += v[i] * scale * w[i];
    store_vec<T>(residual + j, r);
  };
#pragma unroll
  for (int k = 0; k < kHeld; ++k) {
    const int j = first + k * stride;
    if (j >= d) break;
    add(j, xv[k], wv[k], rv[k]);
  }
  for (int j = first + kHeld * stride; j < d; j += stride)
    add(j, __ldcg(xr + j / V), *reinterpret_cast<const uint4*>(weight + j),
        *reinterpret_cast<const uint4*>(residual + j));
}

}  // namespace seam::cuda
