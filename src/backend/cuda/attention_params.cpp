#include "backend/cuda/attention_params.h"

namespace seam::cuda {

AttentionParams make_attention_params(const Tensor& out, const Tensor& q, const Tensor& k_cache,
                                      const Tensor& v_cache, const AttentionBatch& b, const AttentionOptions& o) {
  AttentionParams p;
  p.out = out.data;
  p.out_stride = out.stride[0];
  p.q = q.data;
  p.q_stride = q.stride[0];
  p.k_cache = k_cache.data;
  p.v_cache = v_cache.data;
  p.n_heads = int(q.size(1));
  p.n_kv_heads = int(k_cache.size(1));
  p.head_dim = int(q.size(2));
  p.group = p.n_heads / p.n_kv_heads;
  p.qo_indptr = b.qo_indptr.ptr<int32_t>();
  p.seq_lens = b.seq_lens.ptr<int32_t>();
  p.req_rows = b.req_rows.ptr<int32_t>();
  p.page_table = b.page_table.ptr<int32_t>();
  p.pt_stride = b.page_table.stride[0];
  p.n_tokens = b.n_tokens;
  p.n_seqs = b.n_seqs;
  p.n_prefill_seqs = b.n_prefill_seqs;
  p.n_prefill_tokens = b.n_prefill_tokens;
  p.max_seq_len = b.max_seq_len;
  p.kv_fp8 = k_cache.dtype == DType::fp8_e4m3;
  p.scale = p.kv_fp8 ? o.scale * o.kv_scales.k : o.scale;
  p.v_scale = p.kv_fp8 ? o.kv_scales.v : 1.f;
  p.window = o.sliding_window;
  p.softcap = o.logit_softcap;
  return p;
}

}  // namespace seam::cuda
