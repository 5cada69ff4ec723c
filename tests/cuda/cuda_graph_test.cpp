// CUDA graph capture and replay: a decode-step-like sequence of ops captured once,
// replayed with new inputs copied into the same buffers, equals the eager run on
// those inputs (bit for bit: the same kernels run on the same data).
#include <numeric>

#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaGraphs : public CudaTest {};

TEST_F(CudaGraphs, ReplayWithChangedInputsEqualsEager) {
  const DType t = DType::bf16;
  const int64_t n = 4, hidden = 256, heads = 8, kv = 2, d = 64, vocab = 512, inter = 320;
  const int64_t qkv_w = (heads + 2 * kv) * d, n_slots = 4096, max_ctx = 1024;
  // Weights.
  Tensor embed = upload(round_to(random_normal(size_t(vocab * hidden), rng), t), t, {vocab, hidden});
  Tensor norm_w = upload(round_to(random_normal(size_t(hidden), rng), t), t, {hidden});
  Tensor w_qkv = upload(round_to(random_normal(size_t(qkv_w * hidden), rng, 0.06f), t), t, {qkv_w, hidden});
  Tensor w_o = upload(round_to(random_normal(size_t(hidden * heads * d), rng, 0.06f), t), t, {hidden, heads * d});
  Tensor w_gu = upload(round_to(random_normal(size_t(2 * inter * hidden), rng, 0.06f), t), t, {2 * inter, hidden});
  Tensor w_lm = upload(round_to(random_normal(size_t(vocab * inter), rng, 0.06f), t), t, {vocab, inter});
  std::vector<float> inv_freq(static_cast<size_t>(d / 2));
  for (int64_t j = 0; j < d / 2; ++j) inv_freq[size_t(j)] = std::pow(10000.f, -2.f * float(j) / float(d));
  Tensor freq = upload(inv_freq, DType::f32, {d / 2});
  Tensor kc = upload(round_to(random_normal(size_t(n_slots * kv * d), rng), t), t, {n_slots, kv, d});
  Tensor vc = upload(round_to(random_normal(size_t(n_slots * kv * d), rng), t), t, {n_slots, kv, d});
  std::vector<int32_t> pt(static_cast<size_t>(n * max_ctx));
  std::iota(pt.begin(), pt.end(), 0);
  std::shuffle(pt.begin(), pt.end(), rng);
  Tensor page_table = upload_index(pt, {n, max_ctx});
  // Per-step inputs (fixed addresses) and activations.
  Tensor ids = empty(DType::i32, {n}), pos = empty(DType::i32, {n}), slots = empty(DType::i32, {n});
  Tensor seq_lens = empty(DType::i32, {n}), indptr = empty(DType::i32, {n + 1}), rows = empty(DType::i32, {n});
  Tensor x = empty(t, {n, hidden}), h = empty(t, {n, hidden}), o = empty(t, {n, hidden}), qkv = empty(t, {n, qkv_w});
  Tensor attn = empty(t, {n, heads, d}), gu = empty(t, {n, 2 * inter}), act = empty(t, {n, inter});
  Tensor logits = empty(DType::f32, {n, vocab}), next = empty(DType::i32, {n});
  std::vector<int32_t> iota_n(static_cast<size_t>(n + 1));
  std::iota(iota_n.begin(), iota_n.end(), 0);
  gpu->copy_h2d(indptr.data, iota_n.data(), size_t(n + 1) * 4);
  gpu->copy_h2d(rows.data, iota_n.data(), size_t(n) * 4);

  AttentionBatch b;
  b.n_tokens = int(n);
  b.n_seqs = int(n);
  b.qo_indptr = indptr;
  b.seq_lens = seq_lens;
  b.req_rows = rows;
  b.page_table = page_table;
  SamplingBatch sb;
  sb.n = int(n);
  sb.temperature = upload(std::vector<float>{0.f, 0.9f, 1.f, 0.7f}, DType::f32, {n});
  sb.top_k = upload_index(std::vector<int32_t>{0, 40, 0, 0}, {n});
  sb.top_p = upload(std::vector<float>{1.f, 1.f, 0.9f, 1.f}, DType::f32, {n});
  sb.min_p = upload(std::vector<float>{0.f, 0.f, 0.f, 0.1f}, DType::f32, {n});
  sb.seed = upload_index(std::vector<int64_t>{1, 2, 3, 4}, {n});
  sb.step = upload_index(std::vector<int32_t>{0, 1, 2, 3}, {n});

  auto step = [&] {
    gpu->embedding(x, ids, embed);
    gpu->rms_norm(h, x, norm_w, 1e-5f);
    gpu->linear(qkv, h, w_qkv, Tensor{});
    Tensor q = qkv.slice_cols(0, heads * d).unflatten_last(heads, d);
    Tensor k = qkv.slice_cols(heads * d, kv * d).unflatten_last(kv, d);
    Tensor v = qkv.slice_cols((heads + kv) * d, kv * d).unflatten_last(kv, d);
    gpu->rope(q, k, pos, freq);
    gpu->store_kv(kc, vc, k, v, slots);
    gpu->attention(attn, q, kc, vc, b, AttentionOptions{0.125f});
    gpu->linear_accumulate(x, attn.view({n, heads * d}), w_o, Tensor{});
    gpu->rms_norm_linear(gu, h, x, norm_w, 1e-5f, w_gu, Tensor{});
    gpu->silu_mul(act, gu);
    gpu->linear(logits, act, w_lm, Tensor{});
    gpu->sample(next, logits, sb);
  };
  // Inputs of step i: ids, positions (= seq_len - 1), slots from the page table.
  auto set_inputs = [&](int i) {
    std::vector<int32_t> id_h(static_cast<size_t>(n)), len_h(static_cast<size_t>(n)), pos_h(static_cast<size_t>(n)), slot_h(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      id_h[size_t(r)] = int32_t((r * 97 + i * 31) % vocab);
      len_h[size_t(r)] = int32_t(1 + (r * 211 + i * 149) % (max_ctx - 1));
      pos_h[size_t(r)] = len_h[size_t(r)] - 1;
      slot_h[size_t(r)] = pt[size_t(r * max_ctx + pos_h[size_t(r)])];
    }
    gpu->copy_h2d(ids.data, id_h.data(), size_t(n) * 4);
    gpu->copy_h2d(seq_lens.data, len_h.data(), size_t(n) * 4);
    gpu->copy_h2d(pos.data, pos_h.data(), size_t(n) * 4);
    gpu->copy_h2d(slots.data, slot_h.data(), size_t(n) * 4);
    gpu->synchronize();  // the host vectors die here
  };
  auto snapshot = [&] { return std::make_pair(download(logits), download_i32(next)); };

  // Eager results for three input sets. The KV cache is written by each step, so keep
  // a copy of it and restore it before every run.
  const size_t kv_bytes = size_t(n_slots * kv * d) * 2;
  Tensor kc0 = empty(t, {n_slots, kv, d}), vc0 = empty(t, {n_slots, kv, d});
  gpu->copy_d2d(kc0.data, kc.data, kv_bytes);
  gpu->copy_d2d(vc0.data, vc.data, kv_bytes);
  auto restore = [&] {
    gpu->copy_d2d(kc.data, kc0.data, kv_bytes);
    gpu->copy_d2d(vc.data, vc0.data, kv_bytes);
  };
  std::vector<std::pair<std::vector<float>, std::vector<int32_t>>> eager;
  for (int i = 0; i < 3; ++i) {
    restore();
    set_inputs(i);
    step();
    eager.push_back(snapshot());
  }
  // Capture once (with the inputs of set 0 present), replay for each set.
  restore();
  set_inputs(0);
  gpu->begin_capture();
  EXPECT_TRUE(gpu->capturing());
  step();
  auto graph = gpu->end_capture();
  EXPECT_FALSE(gpu->capturing());
  for (int i : {2, 0, 1}) {
    poison(logits);
    poison(next);
    restore();
    set_inputs(i);
    gpu->replay(*graph);
    const auto got = snapshot();
    EXPECT_EQ(got.first, eager[size_t(i)].first) << "logits of input set " << i;
    EXPECT_EQ(got.second, eager[size_t(i)].second) << "ids of input set " << i;
  }
  EXPECT_NE(eager[0].first, eager[1].first);  // the inputs matter
}

TEST_F(CudaGraphs, CopiesAndOpsOrderOnTheStream) {
  // copy_h2d -> op -> copy_d2h needs no synchronize in between, only before reading.
  std::vector<float> a = random_normal(1000, rng);
  Tensor x = empty(DType::f32, {10, 100}), y = empty(DType::f32, {10, 50});
  gpu->copy_h2d(x.data, a.data(), a.size() * 4);
  gpu->silu_mul(y, x);
  std::vector<float> got(500);
  gpu->copy_d2h(got.data(), y.data, got.size() * 4);
  gpu->synchronize();
  std::vector<float> ref(500);
  cpu.silu_mul(host_view(ref, {10, 50}), host_view(a, {10, 100}));
  expect_close(got, ref, {1e-6, 1e-7}, "silu_mul after async copies");
  EXPECT_GT(gpu->free_memory(), size_t(0));
}

}  // namespace
}  // namespace seam::test
