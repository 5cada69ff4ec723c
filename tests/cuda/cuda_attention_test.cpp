// Paged attention against the CPU reference: extend rows with cached prefixes, decode
// rows, mixed batches (prefill first, then decode), GQA groups 1/4/7, head dims
// 64/128 (tensor-core kernels) and 8/96 (CUDA-core kernel), f32/f16/bf16, q as a
// strided view inside qkv, KV slots scattered through a page table.
#include <algorithm>
#include <numeric>
#include <optional>

#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_wgmma.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

struct Shape {
  int64_t heads, kv_heads, d;
};
struct Seq {
  int n_new;   // new tokens (1 for a decode row)
  int prefix;  // cached tokens before them
};

class CudaAttention : public CudaTest {
 protected:
  // Builds the batch (prefill sequences first), runs both backends, compares.
  // `kernel`: run the prefill through that kernel's launcher directly instead of the backend's
  // dispatch (every sequence must then be a prefill sequence).
  void check(DType t, Shape sh, const std::vector<Seq>& seqs, int n_prefill_seqs, bool known_max,
             const std::string& what, std::optional<cuda::PrefillKernel> kernel = std::nullopt, int q_col0 = 0) {
    SCOPED_TRACE(what + " " + short_name(t) + " heads " + std::to_string(sh.heads) + "/" +
                 std::to_string(sh.kv_heads) + " d " + std::to_string(sh.d) + (known_max ? " max known" : ""));
    ASSERT_TRUE(!kernel || n_prefill_seqs == int(seqs.size())) << "a named prefill kernel computes prefill rows only";
    const int n_seqs = int(seqs.size());
    std::vector<int32_t> indptr = {0}, seq_lens, req_rows;
    int max_len = 0, n_prefill_tokens = 0, total_ctx = 0;
    for (int s = 0; s < n_seqs; ++s) {
      indptr.push_back(indptr.back() + seqs[size_t(s)].n_new);
      seq_lens.push_back(seqs[size_t(s)].n_new + seqs[size_t(s)].prefix);
      max_len = std::max(max_len, seq_lens.back());
      total_ctx += seq_lens.back();
      if (s < n_prefill_seqs) n_prefill_tokens += seqs[size_t(s)].n_new;
    }
    const int n_tokens = indptr.back();
    // Requests live in scattered rows of the page table; their KV in scattered slots.
    const int64_t max_reqs = n_seqs + 3, max_ctx = max_len + 5, n_slots = total_ctx + 40;
    std::vector<int32_t> rows(static_cast<size_t>(max_reqs));
    std::iota(rows.begin(), rows.end(), 0);
    std::shuffle(rows.begin(), rows.end(), rng);
    req_rows.assign(rows.begin(), rows.begin() + n_seqs);
    std::vector<int32_t> perm(static_cast<size_t>(n_slots));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> page_table(size_t(max_reqs * max_ctx), -1);
    size_t next = 0;
    for (int s = 0; s < n_seqs; ++s)
      for (int p = 0; p < seq_lens[size_t(s)]; ++p) page_table[size_t(req_rows[size_t(s)] * max_ctx + p)] = perm[next++];

    const int64_t width = (sh.heads + 2 * sh.kv_heads) * sh.d;
    auto qkv_h = round_to(random_normal(size_t(n_tokens * width), rng, 1.5f), t);
    auto kc_h = round_to(random_normal(size_t(n_slots * sh.kv_heads * sh.d), rng), t);
    auto vc_h = round_to(random_normal(size_t(n_slots * sh.kv_heads * sh.d), rng), t);
    const float scale = 1.f / std::sqrt(float(sh.d));

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
    if (kernel)
      run_prefill_kernel(*kernel, out, qkv.slice_cols(q_col0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d), kc, vc, b,
                         scale);
    else
      gpu->attention(out, qkv.slice_cols(q_col0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d), kc, vc, b, scale);

    AttentionBatch hb = b;
    hb.qo_indptr = host_index(indptr, {n_seqs + 1});
    hb.seq_lens = host_index(seq_lens, {n_seqs});
    hb.req_rows = host_index(req_rows, {n_seqs});
    hb.page_table = host_index(page_table, {max_reqs, max_ctx});
    std::vector<float> ref(static_cast<size_t>(n_tokens * sh.heads * sh.d));
    cpu.attention(host_view(ref, {n_tokens, sh.heads, sh.d}),
                  host_view(qkv_h, {n_tokens, width}).slice_cols(q_col0, sh.heads * sh.d).unflatten_last(sh.heads, sh.d),
                  host_view(kc_h, {n_slots, sh.kv_heads, sh.d}), host_view(vc_h, {n_slots, sh.kv_heads, sh.d}), hb,
                  scale);
    // bf16/f16 kernels round P to the input dtype before P.V (as flash attention does).
    expect_close(download(out), round_to(ref, t), tolerance_for(t, {1e-5, 1e-5}, {1e-2, 5e-3}, {2e-2, 1e-2}),
                 "attention");
  }

  // The prefill rows through one named kernel, with the parameters CudaBackend::attention builds.
  void run_prefill_kernel(cuda::PrefillKernel kernel, Tensor out, Tensor q, Tensor kc, Tensor vc,
                          const AttentionBatch& b, float scale) {
    const cuda::AttentionParams p = cuda::make_attention_params(out, q, kc, vc, b, scale);
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
};

const Shape kShapes[] = {{8, 2, 64}, {32, 8, 128}, {14, 2, 64}, {4, 4, 128}, {8, 4, 8}, {4, 2, 96}};
const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

TEST_F(CudaAttention, ExtendWithCachedPrefixes) {
  const std::vector<Seq> seqs = {{50, 0}, {129, 37}, {1, 5}, {64, 64}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) check(t, sh, seqs, int(seqs.size()), true, "extend");
}

TEST_F(CudaAttention, DecodeRows) {
  const std::vector<Seq> seqs = {{1, 0}, {1, 16}, {1, 299}, {1, 999}, {1, 62}, {1, 4096}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) {
      check(t, sh, seqs, 0, true, "decode");
      check(t, sh, seqs, 0, false, "decode");  // as in a graph: max_seq_len unknown
    }
}

TEST_F(CudaAttention, MixedPrefillAndDecode) {
  const std::vector<Seq> seqs = {{40, 10}, {7, 0}, {1, 4}, {1, 899}, {1, 32}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) check(t, sh, seqs, 2, true, "mixed");
}

TEST_F(CudaAttention, LongContextDecodeUsesManySplits) {
  const std::vector<Seq> seqs = {{1, 32767}, {1, 20000}};
  for (DType t : {DType::bf16, DType::f16}) check(t, {32, 8, 128}, seqs, 0, false, "long decode");
}

TEST_F(CudaAttention, LongPrefillAgainstLongPrefix) {
  const std::vector<Seq> seqs = {{300, 1200}, {200, 0}};
  check(DType::bf16, {16, 4, 128}, seqs, 2, true, "long extend");
}

// q rows 4-byte but not 16-byte aligned (a view 4 elements into qkv): the tensor-core prefill
// kernels copy q rows with 16-byte cp.async, so the backend must take the generic kernel for
// the prefill rows (the decode kernel reads q in 4-byte pairs and still runs).
TEST_F(CudaAttention, QRowsNot16ByteAlignedUseTheGenericPrefill) {
  const std::vector<Seq> seqs = {{40, 9}, {1, 30}, {1, 200}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : {Shape{32, 8, 128}, Shape{8, 2, 64}})
      check(t, sh, seqs, 1, true, "q 8 bytes into qkv", std::nullopt, 4);
}

// Both prefill kernels (d = 128), each named explicitly, against the CPU reference; the
// tests above reach whichever kernel the backend's dispatch picks.
TEST_F(CudaAttention, PrefillMmaSyncKernelD128) {
  check_prefill_kernel_d128(cuda::PrefillKernel::mma_sync, "mma.sync prefill");
}

TEST_F(CudaAttention, PrefillWgmmaKernelD128) {
  if (!cuda::flash_prefill_wgmma_supported(DType::bf16, 128))
    GTEST_SKIP() << "the wgmma prefill kernel needs an sm_90a build (CMAKE_CUDA_ARCHITECTURES 90a) and a CC 9.0 GPU";
  check_prefill_kernel_d128(cuda::PrefillKernel::wgmma, "wgmma prefill");
}

}  // namespace
}  // namespace seam::test
