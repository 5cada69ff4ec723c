#include "backend/cuda/attention_generic.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/kv_fp8.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kMaxPerThread = kGenericMaxHeadDim / kThreads;

// Online softmax over key tiles of kThreads: each thread scores one key of the tile
// (a dot product over d), then each thread accumulates its own output dims. KV: the cache's
// element (T, or Fp8 codes: p.scale holds k_scale, the output is multiplied by p.v_scale).
template <typename T, typename KV>
__global__ void __launch_bounds__(kThreads) attention_generic_kernel(AttentionParams p, int token_begin) {
  pdl_begin();
  extern __shared__ float sh[];  // [d] q, then [kThreads] probabilities
  __shared__ float red[32];
  const int tok = token_begin + blockIdx.x, head = blockIdx.y, tid = threadIdx.x;
  const int d = p.head_dim;
  // The sequence of this row: the last s with qo_indptr[s] <= tok.
  int lo = 0, hi = p.n_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.qo_indptr[mid] <= tok) lo = mid; else hi = mid - 1;
  }
  const int s = lo;
  const int n_q = p.qo_indptr[s + 1] - p.qo_indptr[s];
  const int pos = p.seq_lens[s] - n_q + (tok - p.qo_indptr[s]);
  const int n_ctx = pos + 1;
  const int k_first = window_start(pos, p.window);  // keys before the window are not read
  const int32_t* slots = p.page_table + int64_t(p.req_rows[s]) * p.pt_stride;
  const int kvh = head / p.group;
  const KV* k_cache = static_cast<const KV*>(p.k_cache);
  const KV* v_cache = static_cast<const KV*>(p.v_cache);

  float* qs = sh;
  float* ps = sh + d;
  const T* q = static_cast<const T*>(p.q) + int64_t(tok) * p.q_stride + int64_t(head) * d;
  for (int j = tid; j < d; j += kThreads) qs[j] = to_float(q[j]);
  __syncthreads();

  float acc[kMaxPerThread];
#pragma unroll
  for (int c = 0; c < kMaxPerThread; ++c) acc[c] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int k0 = k_first; k0 < n_ctx; k0 += kThreads) {
    const int key = k0 + tid;
    float score = -INFINITY;
    if (key < n_ctx) {
      const KV* kr = k_cache + (int64_t(slots[key]) * p.n_kv_heads + kvh) * d;
      float dot = 0.f;
      for (int j = 0; j < d; ++j) dot += qs[j] * kv_to_float(kr[j]);
      score = dot * p.scale;
      if (p.softcap > 0.f) score = p.softcap * tanhf(score / p.softcap);
    }
    // Block max of the tile.
    float mx = warp_max(score);
    __syncthreads();
    if ((tid & 31) == 0) red[tid >> 5] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < kThreads / 32; ++w) mx = fmaxf(mx, red[w]);
    const float m_new = fmaxf(m, mx);  // finite: key k0 < n_ctx is always valid
    const float pr = key < n_ctx ? expf(score - m_new) : 0.f;
    ps[tid] = pr;
    const float alpha = expf(m - m_new);
    const float tile_sum = block_sum(pr, red);  // its barriers also publish ps
    l = l * alpha + tile_sum;
    m = m_new;
    const int n_keys = min(kThreads, n_ctx - k0);
#pragma unroll
    for (int c = 0; c < kMaxPerThread; ++c) {
      const int j = tid + c * kThreads;
      if (j >= d) break;
      float a = acc[c] * alpha;
      for (int i = 0; i < n_keys; ++i)
        a += ps[i] * kv_to_float(v_cache[(int64_t(slots[k0 + i]) * p.n_kv_heads + kvh) * d + j]);
      acc[c] = a;
    }
    __syncthreads();  // ps is rewritten by the next tile
  }
  T* out = static_cast<T*>(p.out) + int64_t(tok) * p.out_stride + int64_t(head) * d;
#pragma unroll
  for (int c = 0; c < kMaxPerThread; ++c) {
    const int j = tid + c * kThreads;
    if (j < d) out[j] = from_float<T>(acc[c] / l * p.v_scale);
  }
}

}  // namespace

void launch_attention_generic(const AttentionParams& p, DType dtype, int token_begin, int n, cudaStream_t stream) {
  if (n <= 0) return;
  SEAM_CHECK(p.head_dim <= kGenericMaxHeadDim, "attention: head_dim ", p.head_dim, " above ", kGenericMaxHeadDim);
  const dim3 grid(unsigned(n), unsigned(p.n_heads));
  const size_t smem = size_t(p.head_dim + kThreads) * sizeof(float);
  SEAM_DISPATCH_FLOAT_TYPES(dtype, T, "attention", [&] {
    if (p.kv_fp8)
      launch_kernel(attention_generic_kernel<T, Fp8>, grid, kThreads, smem, stream, p, token_begin);
    else
      launch_kernel(attention_generic_kernel<T, T>, grid, kThreads, smem, stream, p, token_begin);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
