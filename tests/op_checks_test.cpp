// The shared boundary checks of the Backend ops (backend/op_checks.h), through the CPU
// backend: a well-formed call runs, each malformed argument throws a seam::Error naming
// the op, and index tensors longer than the rows produced are accepted. The CUDA backend
// calls the same functions (its GPU tests check that bad inputs throw there too).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/op_checks.h"
#include "core/error.h"

namespace seam {
namespace {

// Host buffers that stay alive for the test; tensors view them.
class OpChecks : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu = make_backend(Device::cpu);
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int32_t>> ints;

  Tensor f32(std::initializer_list<int64_t> dims, float value = 0.5f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    floats.emplace_back(size_t(n), value);
    return Tensor(floats.back().data(), DType::f32, Device::cpu, dims);
  }
  Tensor i32(std::vector<int32_t> v) {
    ints.push_back(std::move(v));
    return Tensor(ints.back().data(), DType::i32, Device::cpu, {int64_t(ints.back().size())});
  }
  // A view with the same storage claiming another dtype / device (never dereferenced).
  static Tensor as(Tensor t, DType d) {
    t.dtype = d;
    return t;
  }
  static Tensor on_cuda(Tensor t) {
    t.device = Device::cuda;
    return t;
  }
  static void expect_error(const std::function<void()>& f, const std::string& op) {
    try {
      f();
      ADD_FAILURE() << op << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  }
};

TEST_F(OpChecks, EmbeddingAndGatherRows) {
  Tensor table = f32({10, 4}), out = f32({3, 4});
  cpu->embedding(out, i32({1, 2, 3}), table);
  cpu->embedding(out, i32({1, 2, 3, 9, 9}), table);  // longer ids: the first 3 are read
  expect_error([&] { cpu->embedding(out, i32({1, 2}), table); }, "embedding ids");
  expect_error([&] { cpu->embedding(f32({3, 5}), i32({1, 2, 3}), table); }, "embedding out");
  expect_error([&] { cpu->embedding(out, as(i32({1, 2, 3}), DType::f32), table); }, "embedding ids");
  expect_error([&] { cpu->embedding(on_cuda(out), i32({1, 2, 3}), table); }, "embedding out");
  Tensor x = f32({5, 4});
  cpu->gather_rows(f32({2, 4}), x, i32({4, 0, 7}));
  expect_error([&] { cpu->gather_rows(f32({2, 3}), x, i32({4, 0})); }, "gather_rows out");
  expect_error([&] { cpu->gather_rows(f32({3, 4}), x, i32({4, 0})); }, "gather_rows idx");
}

TEST_F(OpChecks, NormsLinearSiluMul) {
  Tensor x = f32({3, 8}), w = f32({8}), out = f32({3, 8});
  cpu->rms_norm(out, x, w, 1e-5f);
  expect_error([&] { cpu->rms_norm(out, x, f32({7}), 1e-5f); }, "rms_norm weight");
  expect_error([&] { cpu->rms_norm(f32({2, 8}), x, w, 1e-5f); }, "rms_norm");
  expect_error([&] { cpu->rms_norm(out, as(x, DType::bf16), as(w, DType::bf16), 1e-5f); }, "rms_norm");

  Tensor wl = f32({6, 8}), bias = f32({6}), y = f32({3, 6});
  cpu->linear(y, x, wl, bias);
  cpu->linear(y, x, wl, Tensor{});
  expect_error([&] { cpu->linear(y, x, f32({6, 7}), Tensor{}); }, "linear");
  expect_error([&] { cpu->linear(f32({3, 5}), x, wl, Tensor{}); }, "linear out");
  expect_error([&] { cpu->linear(y, x, wl, f32({5})); }, "linear bias");
  expect_error([&] { cpu->linear(y, x, as(wl, DType::f16), Tensor{}); }, "linear w");
  expect_error([&] { cpu->linear(y, as(x, DType::f16), as(wl, DType::f16), Tensor{}); }, "cpu backend computes in float32");

  cpu->linear_accumulate(y, x, wl, bias);
  expect_error([&] { cpu->linear_accumulate(y, x, f32({6, 7}), Tensor{}); }, "linear");
  Tensor both = f32({3, 8});  // out overlapping x: an in-place accumulate would read what it writes
  expect_error([&] { cpu->linear_accumulate(both.slice_cols(0, 6), both, wl, Tensor{}); }, "overlaps x");
  cpu->rms_norm_linear(y, out, x, w, 1e-5f, wl, bias);
  expect_error([&] { cpu->rms_norm_linear(y, out, x, f32({7}), 1e-5f, wl, bias); }, "rms_norm weight");
  expect_error([&] { cpu->rms_norm_linear(y, f32({3, 7}), x, w, 1e-5f, wl, bias); }, "rms_norm");
  expect_error([&] { cpu->rms_norm_linear(f32({3, 5}), out, x, w, 1e-5f, wl, bias); }, "linear out");

  // The MLP's input stage: [gate | up] of 2 x 3 features.
  Tensor act = f32({3, 3}), gu = f32({3, 6});
  cpu->rms_norm_gate_up_silu(act, gu, out, x, w, 1e-5f, wl);
  expect_error([&] { cpu->rms_norm_gate_up_silu(f32({3, 4}), gu, out, x, w, 1e-5f, wl); }, "silu_mul");

  cpu->silu_mul(f32({3, 4}), x);
  expect_error([&] { cpu->silu_mul(f32({3, 3}), x); }, "silu_mul gate_up");
}

// Issue 24's ops: each malformed argument names the op (and the argument).
TEST_F(OpChecks, FamilyOps) {
  Tensor x = f32({3, 8}), act = f32({3, 4}), w = f32({8});
  cpu->gated_act(act, x, Activation::gelu_tanh);
  expect_error([&] { cpu->gated_act(f32({3, 3}), x, Activation::gelu_tanh); }, "gated_act gate_up");
  expect_error([&] { cpu->gated_act(act, x, static_cast<Activation>(7)); }, "gated_act: unknown activation");
  cpu->scale(x, 2.f);
  expect_error([&] { cpu->scale(f32({8}), 2.f); }, "scale x");
  cpu->softcap(x, 30.f);
  expect_error([&] { cpu->softcap(x, -1.f); }, "softcap: cap");
  expect_error([&] { cpu->softcap(on_cuda(x), 30.f); }, "softcap x");
  Tensor res = f32({3, 8});
  cpu->rms_norm_add(res, x, w, 1e-6f);
  expect_error([&] { cpu->rms_norm_add(f32({3, 7}), x, w, 1e-6f); }, "rms_norm_add residual");
  expect_error([&] { cpu->rms_norm_add(res, x, f32({7}), 1e-6f); }, "rms_norm_add weight");
  expect_error([&] { cpu->rms_norm_add(x, x, w, 1e-6f); }, "rms_norm_add: residual overlaps x");
  // Partial rotary and LongRoPE tables.
  Tensor q = f32({2, 4, 8}), k = f32({2, 2, 8});
  cpu->rope(q, k, i32({1, 2}), RopeTables(f32({3}), f32({3}), 2));  // rotary_dim 6 of 8
  expect_error([&] { cpu->rope(q, k, i32({1, 2}), RopeTables(f32({3}), f32({2}), 2)); }, "rope inv_freq_long");
  expect_error([&] { cpu->rope(q, k, i32({1, 2}), RopeTables(f32({3}), f32({3}), -1)); }, "rope long_from");
}

TEST_F(OpChecks, RopeAndKvStore) {
  const int64_t n = 2, heads = 4, kv = 2, d = 8, n_slots = 6;
  Tensor q = f32({n, heads, d}), k = f32({n, kv, d}), v = f32({n, kv, d});
  Tensor inv_freq = f32({d / 2}), kc = f32({n_slots, kv, d}), vc = f32({n_slots, kv, d});
  cpu->rope(q, k, i32({3, 4}), inv_freq);
  cpu->rope_store_kv(q, k, v, i32({3, 4, 5}), inv_freq, kc, vc, i32({1, 2, 0}));
  expect_error([&] { cpu->rope(q, k, i32({3}), inv_freq); }, "rope positions");
  expect_error([&] { cpu->rope(q, k, i32({3, 4}), f32({d})); }, "rope inv_freq");
  expect_error([&] { cpu->rope(q, f32({n, kv, d + 2}), i32({3, 4}), inv_freq); }, "rope");
  expect_error([&] { cpu->store_kv(kc, vc, k, v, i32({1})); }, "store_kv slots");
  expect_error([&] { cpu->store_kv(kc, f32({n_slots + 1, kv, d}), k, v, i32({1, 2})); }, "store_kv v_cache");
  expect_error([&] { cpu->store_kv(kc, vc, k, f32({n, kv + 1, d}), i32({1, 2})); }, "store_kv v");

  // Attention's whole input stage: hidden 16 -> qkv of (4 + 2 * 2) heads of 8.
  const int64_t hidden = 16, width = (heads + 2 * kv) * d;
  Tensor x = f32({n, hidden}), g = f32({hidden}), normed = f32({n, hidden}), w = f32({width, hidden});
  RopeStoreArgs r;
  r.n_heads = int(heads);
  r.positions = i32({3, 4});
  r.inv_freq = inv_freq;
  r.k_cache = kc;
  r.v_cache = vc;
  r.slots = i32({1, 2});
  cpu->rms_norm_qkv_rope_store(f32({n, width}), normed, x, g, 1e-5f, w, Tensor{}, r);
  // A qkv that is not (n_heads + 2 n_kv_heads) * d wide: a clear error, not a view past its end.
  expect_error([&] { cpu->rms_norm_qkv_rope_store(f32({n, width - d}), normed, x, g, 1e-5f,
                                                  f32({width - d, hidden}), Tensor{}, r); },
               "rms_norm_qkv_rope_store: qkv");
  RopeStoreArgs bad = r;
  bad.slots = i32({1});
  expect_error([&] { cpu->rms_norm_qkv_rope_store(f32({n, width}), normed, x, g, 1e-5f, w, Tensor{}, bad); },
               "store_kv slots");
}

TEST_F(OpChecks, AttentionMetadata) {
  const int64_t heads = 4, kv = 2, d = 8, n_slots = 16, max_reqs = 3, max_ctx = 8;
  // One extend row of 3 tokens and one decode row: 4 tokens, 2 sequences.
  Tensor q = f32({4, heads, d}), out = f32({4, heads, d});
  Tensor kc = f32({n_slots, kv, d}), vc = f32({n_slots, kv, d});
  ints.emplace_back(size_t(max_reqs * max_ctx), 1);  // every position in KV slot 1
  const Tensor page_table(ints.back().data(), DType::i32, Device::cpu, {max_reqs, max_ctx});
  AttentionBatch b;
  b.n_tokens = 4;
  b.n_seqs = 2;
  b.n_prefill_seqs = 1;
  b.n_prefill_tokens = 3;
  b.max_seq_len = 5;
  b.qo_indptr = i32({0, 3, 4});
  b.seq_lens = i32({3, 5});
  b.req_rows = i32({0, 1});
  b.page_table = page_table;
  cpu->attention(out, q, kc, vc, b, AttentionOptions{0.3f});
  AttentionBatch bad = b;
  bad.n_prefill_tokens = 2;  // the decode "row" would have 2 tokens
  expect_error([&] { cpu->attention(out, q, kc, vc, bad, AttentionOptions{0.3f}); }, "decode rows must have one token each");
  bad = b;
  bad.qo_indptr = i32({0, 3});
  expect_error([&] { cpu->attention(out, q, kc, vc, bad, AttentionOptions{0.3f}); }, "attention qo_indptr");
  bad = b;
  bad.n_prefill_seqs = 3;
  expect_error([&] { cpu->attention(out, q, kc, vc, bad, AttentionOptions{0.3f}); }, "attention");
  expect_error([&] { cpu->attention(out, q, kc, f32({n_slots, kv, d + 1}), b, AttentionOptions{0.3f}); }, "attention v_cache");
  expect_error([&] { cpu->attention(f32({4, heads, d + 1}), q, kc, vc, b, AttentionOptions{0.3f}); }, "attention out");
}

TEST_F(OpChecks, SamplingAndPenalties) {
  Tensor logits = f32({2, 5});
  Tensor ids = i32({0, 0});
  SamplingBatch s;
  s.n = 2;
  s.temperature = f32({2}, 0.f);  // greedy
  s.top_k = i32({0, 0});
  s.top_p = f32({2}, 1.f);
  s.min_p = f32({2}, 0.f);
  std::vector<int64_t> seeds = {1, 2};
  s.seed = Tensor(seeds.data(), DType::i64, Device::cpu, {2});
  s.step = i32({0, 0});
  cpu->sample(ids, logits, s);
  SamplingBatch bad = s;
  bad.top_p = f32({1}, 1.f);
  expect_error([&] { cpu->sample(ids, logits, bad); }, "sample top_p");
  bad = s;
  bad.seed = i32({1, 2});
  expect_error([&] { cpu->sample(ids, logits, bad); }, "sample seed");
  expect_error([&] { cpu->sample(i32({0}), logits, s); }, "sample out_ids");

  PenaltyBatch p;
  p.n = 2;
  p.nnz = 2;
  p.indptr = i32({0, 1, 2});
  p.tokens = i32({3, 4});
  p.out_counts = i32({1, 0});
  p.frequency = f32({2}, 0.1f);
  p.presence = f32({2}, 0.1f);
  p.repetition = f32({2}, 1.1f);
  cpu->apply_penalties(logits, p);
  PenaltyBatch badp = p;
  badp.tokens = i32({3});
  expect_error([&] { cpu->apply_penalties(logits, badp); }, "apply_penalties tokens");
  badp = p;
  badp.repetition = f32({1}, 1.f);
  expect_error([&] { cpu->apply_penalties(logits, badp); }, "apply_penalties repetition");

  // The logits of the sampling-side ops: float32 with at least n rows; the error names the op.
  Tensor one_row = f32({1, 5});
  expect_error([&] { cpu->sample(ids, one_row, s); }, "sample logits");
  expect_error([&] { cpu->sample(ids, as(logits, DType::bf16), s); }, "sample logits");
  expect_error([&] { cpu->apply_penalties(one_row, p); }, "apply_penalties logits");
  expect_error([&] { cpu->apply_penalties(on_cuda(logits), p); }, "apply_penalties logits");
  // No rows: nothing else is checked (the batch's other tensors may be empty).
  PenaltyBatch none;
  cpu->apply_penalties(one_row, none);
}

}  // namespace
}  // namespace seam
