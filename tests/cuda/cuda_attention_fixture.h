// The fixture of the paged-attention tests (cuda_attention_test.cpp, cuda_attention_window_test.cpp):
// builds a batch (prefill sequences first, then decode rows) with KV slots scattered through a
// page table, runs the CUDA backend (or one named prefill kernel), and compares with the CPU
// reference.
#pragma once
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "attention_batch.h"
#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/attention_prefill_ws.h"
#include "cuda_test_util.h"

namespace seam::test {

class CudaAttention : public CudaTest {
 protected:
  // Builds the batch (prefill sequences first), runs both backends, compares.
  // `kernel`: run the prefill through that kernel's launcher directly instead of the backend's
  // dispatch (every sequence must then be a prefill sequence).
  // `opt`: the window and soft-cap (the scale is 1 / sqrt(d)). With a window, the KV slots of
  // keys below every row's window (rounded down to 128 keys, the largest key tile of a kernel)
  // hold NaN: a kernel that reads them fails. `graph`: the call is also captured in a CUDA graph
  // (after an eager run, as the engine warms up) and replayed into a poisoned out.
  void check(DType t, Shape sh, const std::vector<Seq>& seqs, int n_prefill_seqs, bool known_max,
             const std::string& what, std::optional<cuda::PrefillKernel> kernel = std::nullopt, int q_col0 = 0,
             AttentionOptions opt = {}, bool graph = false) {
    SCOPED_TRACE(what + " " + short_name(t) + " heads " + std::to_string(sh.heads) + "/" + std::to_string(sh.kv_heads) +
                 " d " + std::to_string(sh.d) + (known_max ? " max known" : "") + " window " +
                 std::to_string(opt.sliding_window) + " softcap " + std::to_string(opt.logit_softcap) +
                 (graph ? " graph" : ""));
    ASSERT_TRUE(!kernel || n_prefill_seqs == int(seqs.size())) << "a named prefill kernel computes prefill rows only";
    PagedBatch pb = paged_batch(seqs, n_prefill_seqs, rng);  // host_index views its vectors
    const int n_seqs = pb.n_seqs, n_tokens = pb.n_tokens, max_len = pb.max_len, n_prefill_tokens = pb.n_prefill_tokens;
    const int64_t max_reqs = pb.max_reqs, max_ctx = pb.max_ctx, n_slots = pb.n_slots;
    std::vector<int32_t>&indptr = pb.indptr, &seq_lens = pb.seq_lens, &req_rows = pb.req_rows,
                         &page_table = pb.page_table;

    const int64_t width = (sh.heads + 2 * sh.kv_heads) * sh.d;
    auto qkv_h = round_to(random_normal(size_t(n_tokens * width), rng, 1.5f), t);
    auto kc_h = round_to(random_normal(size_t(n_slots * sh.kv_heads * sh.d), rng), t);
    auto vc_h = round_to(random_normal(size_t(n_slots * sh.kv_heads * sh.d), rng), t);
    opt.scale = 1.f / std::sqrt(float(sh.d));
    if (opt.sliding_window > 0) {
      const int64_t kv_width = sh.kv_heads * sh.d;
      for (int s = 0; s < n_seqs; ++s) {
        const int first_q = seq_lens[size_t(s)] - seqs[size_t(s)].n_new;
        const int unread = std::max(0, first_q - opt.sliding_window + 1) / 128 * 128;
        for (int p = 0; p < unread; ++p) {
          const int32_t slot = page_table[size_t(req_rows[size_t(s)] * max_ctx + p)];
          std::fill_n(kc_h.begin() + slot * kv_width, kv_width, NAN);
          std::fill_n(vc_h.begin() + slot * kv_width, kv_width, NAN);
        }
      }
    }

    Tensor qkv = upload(qkv_h, t, {n_tokens, width});
    Tensor kc = upload(kc_h, t, {n_slots, sh.kv_heads, sh.d}), vc = upload(vc_h, t, {n_slots, sh.kv_heads, sh.d});
    Tensor out = empty(t, {n_tokens, sh.heads, sh.d});
    AttentionBatch b;
    b.n_tokens = n_tokens;
    b.n_seqs = n_seqs;
    b.n_prefill_seqs = n_prefill_seqs;
    b.n_prefill_tokens = n_prefill_tokens;
    b.max_seq_len = known_max ? max_len : 0;
    b.qo_indptr = upload_index(indptr, {n_seqs + 1});
    b.seq_lens = upload_index(seq_lens, {n_seqs});
    b.req_rows = upload_index(req_rows, {n_seqs});
    b.page_table = upload_index(page_table, {max_reqs, max_ctx});
    const Tensor q = qkv.slice_cols(q_col0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d);
    if (kernel)
      run_prefill_kernel(*kernel, out, q, kc, vc, b, opt);
    else
      gpu->attention(out, q, kc, vc, b, opt);
    if (graph) {
      ASSERT_FALSE(kernel) << "graphs capture the backend's dispatch";
      gpu->synchronize();
      gpu->begin_capture();
      gpu->attention(out, q, kc, vc, b, opt);
      std::unique_ptr<Graph> g = gpu->end_capture();
      poison(out);
      gpu->replay(*g);
      gpu->synchronize();
    }

    AttentionBatch hb = b;
    hb.qo_indptr = host_index(indptr, {n_seqs + 1});
    hb.seq_lens = host_index(seq_lens, {n_seqs});
    hb.req_rows = host_index(req_rows, {n_seqs});
    hb.page_table = host_index(page_table, {max_reqs, max_ctx});
    std::vector<float> ref(static_cast<size_t>(n_tokens * sh.heads * sh.d));
    cpu.attention(
        host_view(ref, {n_tokens, sh.heads, sh.d}),
        host_view(qkv_h, {n_tokens, width}).slice_cols(q_col0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d),
        host_view(kc_h, {n_slots, sh.kv_heads, sh.d}), host_view(vc_h, {n_slots, sh.kv_heads, sh.d}), hb, opt);
    // bf16/f16 kernels round P to the input dtype before P.V (as flash attention does).
    expect_close(download(out), round_to(ref, t), tolerance_for(t, {1e-5, 1e-5}, {1e-2, 5e-3}, {2e-2, 1e-2}),
                 "attention");
  }

  // The prefill rows through one named kernel, with the parameters CudaBackend::attention builds.
  void run_prefill_kernel(cuda::PrefillKernel kernel, Tensor out, Tensor q, Tensor kc, Tensor vc,
                          const AttentionBatch& b, const AttentionOptions& opt) {
    const cuda::AttentionParams p = cuda::make_attention_params(out, q, kc, vc, b, opt);
    cuda::launch_flash_prefill(p, q.dtype, static_cast<cudaStream_t>(cuda_backend_stream(*gpu)), kernel);
    gpu->synchronize();
  }

  // d = 128 prefill batches through one kernel: sequences longer than one 128-row block with
  // cached prefixes that are not multiples of 64, several sequences a batch, 1-3 new tokens,
  // rows ending mid-tile; GQA groups 4 and 1; bf16 and f16.
  void check_prefill_kernel_d128(cuda::PrefillKernel kernel, const std::string& name) {
    const std::vector<std::vector<Seq>> batches = {
        {{300, 77}},                                                 // 1,200 rows (group 4): 10 blocks
        {{45, 200}, {1, 0}, {2, 130}, {3, 5}, {129, 0}, {70, 333}},  // mid-tile ends, tiny extends
        {{300, 1000}},                                               // long prefix, 11 key tiles
    };
    for (DType t : {DType::bf16, DType::f16})
      for (const Shape& sh : {Shape{32, 8, 128}, Shape{4, 4, 128}})
        for (size_t i = 0; i < batches.size(); ++i)
          check(t, sh, batches[i], int(batches[i].size()), true, name + " batch " + std::to_string(i), kernel);
  }

  // Two named prefill kernels on the same batch (every sequence a prefill sequence), their
  // outputs compared element for element: kernels that share their arithmetic must agree bit
  // for bit (the warp-specialised wgmma kernel and the one-role one).
  void expect_prefill_kernels_equal(DType t, Shape sh, const std::vector<Seq>& seqs, cuda::PrefillKernel a,
                                    cuda::PrefillKernel b_kernel, AttentionOptions opt, const std::string& what) {
    SCOPED_TRACE(what + " " + short_name(t) + " heads " + std::to_string(sh.heads) + "/" + std::to_string(sh.kv_heads));
    PagedBatch pb = paged_batch(seqs, int(seqs.size()), rng);
    const int n_seqs = pb.n_seqs, n_tokens = pb.n_tokens;
    const int64_t width = (sh.heads + 2 * sh.kv_heads) * sh.d;
    Tensor qkv = upload(round_to(random_normal(size_t(n_tokens * width), rng, 1.5f), t), t, {n_tokens, width});
    Tensor kc = upload(round_to(random_normal(size_t(pb.n_slots * sh.kv_heads * sh.d), rng), t), t,
                       {pb.n_slots, sh.kv_heads, sh.d});
    Tensor vc = upload(round_to(random_normal(size_t(pb.n_slots * sh.kv_heads * sh.d), rng), t), t,
                       {pb.n_slots, sh.kv_heads, sh.d});
    opt.scale = 1.f / std::sqrt(float(sh.d));
    AttentionBatch b;
    b.n_tokens = n_tokens;
    b.n_seqs = n_seqs;
    b.n_prefill_seqs = n_seqs;
    b.n_prefill_tokens = pb.n_prefill_tokens;
    b.max_seq_len = pb.max_len;
    b.qo_indptr = upload_index(pb.indptr, {n_seqs + 1});
    b.seq_lens = upload_index(pb.seq_lens, {n_seqs});
    b.req_rows = upload_index(pb.req_rows, {n_seqs});
    b.page_table = upload_index(pb.page_table, {pb.max_reqs, pb.max_ctx});
    const Tensor q = qkv.slice_cols(0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d);
    Tensor out_a = empty(t, {n_tokens, sh.heads, sh.d}), out_b = empty(t, {n_tokens, sh.heads, sh.d});
    run_prefill_kernel(a, out_a, q, kc, vc, b, opt);
    run_prefill_kernel(b_kernel, out_b, q, kc, vc, b, opt);
    const std::vector<float> got_a = download(out_a), got_b = download(out_b);
    ASSERT_EQ(got_a.size(), got_b.size());
    size_t differ = 0, first = got_a.size();
    for (size_t i = 0; i < got_a.size(); ++i)
      if (!(got_a[i] == got_b[i])) {  // NaN (a poisoned, unwritten output) differs too
        if (first == got_a.size()) first = i;
        ++differ;
      }
    EXPECT_EQ(differ, 0u) << "first at " << first << ": " << (first < got_a.size() ? got_a[first] : 0.f) << " vs "
                          << (first < got_b.size() ? got_b[first] : 0.f);
  }
};

}  // namespace seam::test
