// Sliding-window attention and logit soft-capping (AttentionOptions; Gemma 2/3, Mistral, Phi)
// against the CPU reference, on every kernel: the flash decode (split-KV) kernel, both prefill
// kernels (mma.sync; wgmma at d = 128), the generic kernel (f32, d = 8) and the mixed step's
// split, eager and inside a captured graph, for head dims 64/96/128/256. Keys below each row's
// window are NaN in the cache (cuda_attention_fixture.h): a kernel that reads them fails.
// Soft-cap 1.0 (scores here are O(1)) makes the cap change the output well beyond tolerance.
#include "cuda_attention_fixture.h"

namespace seam::test {
namespace {

// Phi-3.5-mini (32/32 x 96, cut to 8/8), gemma-2-9b (16/8 x 256), Mistral (32/8 x 128), a d 64
// shape with group 7, and the generic kernel's d 8.
const Shape kShapes[] = {{8, 8, 96}, {16, 8, 256}, {32, 8, 128}, {14, 2, 64}, {8, 4, 8}};
const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

std::vector<AttentionOptions> option_sets() {
  std::vector<AttentionOptions> v;
  for (int window : {0, 1, 37, 200})
    for (float cap : {0.f, 1.f}) {
      if (window == 0 && cap == 0.f) continue;  // cuda_attention_test.cpp covers plain attention
      AttentionOptions o;
      o.sliding_window = window;
      o.logit_softcap = cap;
      v.push_back(o);
    }
  return v;
}

TEST_F(CudaAttention, WindowAndSoftcapExtend) {
  // Prefixes longer than the window (whole key tiles skipped), rows crossing it, tiny extends.
  const std::vector<Seq> seqs = {{50, 0}, {129, 337}, {1, 5}, {70, 64}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes)
      for (const AttentionOptions& o : option_sets()) check(t, sh, seqs, int(seqs.size()), true, "extend", {}, 0, o);
}

TEST_F(CudaAttention, WindowAndSoftcapDecode) {
  const std::vector<Seq> seqs = {{1, 0}, {1, 16}, {1, 299}, {1, 999}, {1, 62}, {1, 4096}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes)
      for (const AttentionOptions& o : option_sets()) {
        check(t, sh, seqs, 0, true, "decode", {}, 0, o);
        check(t, sh, seqs, 0, false, "decode", {}, 0, o);  // as in a graph: max_seq_len unknown
      }
}

TEST_F(CudaAttention, WindowAndSoftcapMixed) {
  const std::vector<Seq> seqs = {{40, 310}, {7, 0}, {1, 4}, {1, 899}, {1, 32}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes)
      for (const AttentionOptions& o : option_sets()) check(t, sh, seqs, 2, true, "mixed", {}, 0, o);
}

// Decode batches of 1 to 64 rows at the new head dims, with and without a window (the split
// count follows the window, not the context, when one is set).
TEST_F(CudaAttention, DecodeBatchesAtHeadDims96And256) {
  for (int batch : {1, 8, 64}) {
    std::vector<Seq> seqs;
    for (int i = 0; i < batch; ++i) seqs.push_back({1, 100 + 523 * i % 5000});
    for (const Shape& sh : {Shape{32, 32, 96}, Shape{16, 8, 256}, Shape{8, 4, 256}})
      for (int window : {0, 4096, 300}) {
        AttentionOptions o;
        o.sliding_window = window;
        check(DType::bf16, sh, seqs, 0, false, "decode batch " + std::to_string(batch), {}, 0, o);
      }
  }
}

TEST_F(CudaAttention, WindowAndSoftcapInsideAGraph) {
  const std::vector<Seq> decode = {{1, 16}, {1, 999}, {1, 4096}};
  const std::vector<Seq> mixed = {{40, 310}, {1, 899}, {1, 32}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : {Shape{16, 8, 256}, Shape{8, 8, 96}, Shape{32, 8, 128}})
      for (const AttentionOptions& o : option_sets()) {
        check(t, sh, decode, 0, false, "decode", {}, 0, o, /*graph=*/true);
        check(t, sh, mixed, 1, true, "mixed", {}, 0, o, /*graph=*/true);
      }
}

// A decode graph bakes the split count (from the window: max_seq_len is unknown) and reads the
// lengths from the device: replays with longer and shorter contexts than at capture must stay
// exact, each split cutting the window of its own length.
TEST_F(CudaAttention, WindowedDecodeGraphReplaysWithNewLengths) {
  const DType t = DType::bf16;
  const int64_t heads = 16, kv = 8, d = 256, n = 3, max_ctx = 2048, n_slots = n * max_ctx;
  std::vector<int32_t> page_table(static_cast<size_t>(n_slots));
  std::iota(page_table.begin(), page_table.end(), 0);
  std::shuffle(page_table.begin(), page_table.end(), rng);
  auto q_h = round_to(random_normal(size_t(n * heads * d), rng, 1.5f), t);
  auto kc_h = round_to(random_normal(size_t(n_slots * kv * d), rng), t);
  auto vc_h = round_to(random_normal(size_t(n_slots * kv * d), rng), t);
  std::vector<int32_t> indptr = {0, 1, 2, 3}, rows = {2, 0, 1}, lens = {50, 400, 1000};
  Tensor q = upload(q_h, t, {n, heads, d}), kc = upload(kc_h, t, {n_slots, kv, d}),
         vc = upload(vc_h, t, {n_slots, kv, d}), out = empty(t, {n, heads, d});
  AttentionBatch b;
  b.n_tokens = int(n);
  b.n_seqs = int(n);
  b.qo_indptr = upload_index(indptr, {n + 1});
  b.seq_lens = upload_index(lens, {n});
  b.req_rows = upload_index(rows, {n});
  b.page_table = upload_index(page_table, {n, max_ctx});
  AttentionOptions o;
  o.scale = 1.f / 16.f;
  o.sliding_window = 300;
  o.logit_softcap = 2.f;
  gpu->attention(out, q, kc, vc, b, o);  // eager first, as the engine's warm-up
  gpu->synchronize();
  gpu->begin_capture();
  gpu->attention(out, q, kc, vc, b, o);
  std::unique_ptr<Graph> g = gpu->end_capture();
  for (const std::vector<int32_t>& new_lens : {std::vector<int32_t>{50, 400, 1000}, {2048, 301, 1}, {299, 300, 1777}}) {
    SCOPED_TRACE("lengths " + std::to_string(new_lens[0]) + " " + std::to_string(new_lens[1]) + " " +
                 std::to_string(new_lens[2]));
    std::vector<int32_t> l = new_lens;
    gpu->copy_h2d(b.seq_lens.data, l.data(), l.size() * 4);
    poison(out);
    gpu->replay(*g);
    gpu->synchronize();
    AttentionBatch hb = b;
    hb.qo_indptr = host_index(indptr, {n + 1});
    hb.seq_lens = host_index(l, {n});
    hb.req_rows = host_index(rows, {n});
    hb.page_table = host_index(page_table, {n, max_ctx});
    std::vector<float> ref(static_cast<size_t>(n * heads * d));
    cpu.attention(host_view(ref, {n, heads, d}), host_view(q_h, {n, heads, d}), host_view(kc_h, {n_slots, kv, d}),
                  host_view(vc_h, {n_slots, kv, d}), hb, o);
    expect_close(download(out), round_to(ref, t), tolerance_for(t, {1e-5, 1e-5}, {1e-2, 5e-3}, {2e-2, 1e-2}),
                 "windowed decode graph");
  }
}

// Each prefill kernel named explicitly, with windows that skip whole 64- and 128-key tiles and
// rows whose window starts mid-tile.
TEST_F(CudaAttention, WindowedPrefillKernels) {
  const std::vector<std::vector<Seq>> batches = {{{300, 1000}}, {{45, 200}, {1, 0}, {129, 0}, {70, 333}}};
  std::vector<cuda::PrefillKernel> kernels = {cuda::PrefillKernel::mma_sync};
  if (cuda::flash_prefill_wgmma_supported(DType::bf16, 128)) kernels.push_back(cuda::PrefillKernel::wgmma);
  if (cuda::flash_prefill_ws_supported(DType::bf16, 128, false)) kernels.push_back(cuda::PrefillKernel::wgmma_ws);
  for (cuda::PrefillKernel k : kernels)
    for (DType t : {DType::bf16, DType::f16})
      for (const AttentionOptions& o : option_sets())
        for (size_t i = 0; i < batches.size(); ++i) {
          const std::string name =
              std::string(k == cuda::PrefillKernel::wgmma      ? "wgmma"
                          : k == cuda::PrefillKernel::wgmma_ws ? "wgmma ws"
                                                               : "mma.sync") +
              " batch " + std::to_string(i);
          check(t, {32, 8, 128}, batches[i], int(batches[i].size()), true, name, k, 0, o);
          if (k == cuda::PrefillKernel::mma_sync)
            for (const Shape& sh : {Shape{8, 8, 96}, Shape{16, 8, 256}})
              check(t, sh, batches[i], int(batches[i].size()), true, name, k, 0, o);
        }
}

}  // namespace
}  // namespace seam::test
