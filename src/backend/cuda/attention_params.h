// AttentionParams: one attention call's pointers, strides and host sizes, as the
// attention kernels take them (by value). Built once per call from the op's tensors
// (make_attention_params).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"

namespace seam::cuda {

struct AttentionParams {
  void* out = nullptr;          // [n_tokens, n_heads, d]
  int64_t out_stride = 0;       // row stride (elements)
  const void* q = nullptr;      // [n_tokens, n_heads, d], rows may be strided (a view inside qkv)
  int64_t q_stride = 0;
  const void* k_cache = nullptr;  // [n_slots, n_kv_heads, d] in q's dtype, or E4M3 codes (kv_fp8)
  const void* v_cache = nullptr;  // [n_slots, n_kv_heads, d]
  // An FP8 cache (kv_fp8.cuh): the kernels read codes; `scale` already holds the softmax scale
  // times k_scale (q . (c k_scale) scale = (q . c) (scale k_scale)), and the output's
  // normalisation multiplies by v_scale (sum p (c v_scale) = v_scale sum p c). 1 for a float cache.
  bool kv_fp8 = false;
  float v_scale = 1.f;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, group = 0;  // group = n_heads / n_kv_heads
  const int32_t* qo_indptr = nullptr;   // [n_seqs + 1]
  const int32_t* seq_lens = nullptr;    // [n_seqs]
  const int32_t* req_rows = nullptr;    // [n_seqs]
  const int32_t* page_table = nullptr;  // [max_reqs, pt_stride]
  int64_t pt_stride = 0;
  int n_tokens = 0, n_seqs = 0, n_prefill_seqs = 0, n_prefill_tokens = 0;
  int max_seq_len = 0;  // 0 = unknown (graphs)
  float scale = 1.f;
  // AttentionOptions: a query at position p sees keys j with p - window < j <= p (0: no window);
  // softcap > 0: score = softcap * tanh(score * scale / softcap) before the softmax.
  int window = 0;
  float softcap = 0.f;
};

// The first key a query at position `pos` sees (its window's start; 0 without a window).
__host__ __device__ inline int window_start(int pos, int window) {
  return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
}

// The parameters of one attention call on these (already boundary-checked) tensors: out and
// q [n, heads, d], the caches [n_slots, kv_heads, d], b's device index buffers.
AttentionParams make_attention_params(const Tensor& out, const Tensor& q, const Tensor& k_cache,
                                      const Tensor& v_cache, const AttentionBatch& b, const AttentionOptions& o);

}  // namespace seam::cuda
