// The ops issue 24's families add, CUDA against the CPU reference: gated_act (silu, gelu_tanh),
// scale, softcap, rms_norm_add, rope / rope_store_kv with partial rotary and LongRoPE tables, the
// batch-1 fused GEMV paths (rms_norm_qkv_rope_store with those tables, rms_norm_gate_up_act with
// gelu_tanh), and the new ops inside a captured graph.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaFamilyOps : public CudaTest {};

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

TEST_F(CudaFamilyOps, GatedActMatchesCpu) {
  for (Activation a : {Activation::silu, Activation::gelu_tanh})
    for (DType t : kDtypes)
      for (int64_t inter : {3, 172, 14336}) {
        SCOPED_TRACE(std::string(activation_name(a)) + " " + short_name(t) + " inter " + std::to_string(inter));
        const int64_t n = 7;
        auto gu_h = round_to(random_normal(size_t(n * 2 * inter), rng, 3.f), t);
        Tensor gu = upload(gu_h, t, {n, 2 * inter});
        Tensor out = empty(t, {n, inter});
        gpu->gated_act(out, gu, a);
        std::vector<float> ref(static_cast<size_t>(n * inter));
        cpu.gated_act(host_view(ref, {n, inter}), host_view(gu_h, {n, 2 * inter}), a);
        expect_close(download(out), round_to(ref, t), tolerance_for(t), "gated_act");
      }
}

TEST_F(CudaFamilyOps, ScaleSoftcapAndRmsNormAdd) {
  for (DType t : kDtypes) {
    SCOPED_TRACE(short_name(t));
    const int64_t n = 5, d = 2304, pitch = d + 8;  // gemma-2-2b's hidden; rows strided
    auto x_h = round_to(random_normal(size_t(n * pitch), rng, 2.f), t);
    Tensor x = upload(x_h, t, {n, pitch});
    gpu->scale(x.slice_cols(0, d), 48.f);  // sqrt(2304)
    auto ref = x_h;
    cpu.scale(host_view(ref, {n, pitch}).slice_cols(0, d), 48.f);
    expect_close(download(x), round_to(ref, t), tolerance_for(t), "scale");

    // residual += rms_norm(x) * w, x a strided view.
    auto res_h = round_to(random_normal(size_t(n * d), rng), t);
    auto w_h = round_to(random_normal(size_t(d), rng), t);
    Tensor res = upload(res_h, t, {n, d});
    Tensor x2 = upload(x_h, t, {n, pitch});
    gpu->rms_norm_add(res, x2.slice_cols(0, d), upload(w_h, t, {d}), 1e-6f);
    auto res_ref = res_h;
    cpu.rms_norm_add(host_view(res_ref, {n, d}), host_view(x_h, {n, pitch}).slice_cols(0, d), host_view(w_h, {d}),
                     1e-6f);
    expect_close(download(res), round_to(res_ref, t), tolerance_for(t, {1e-5, 1e-5}), "rms_norm_add");
  }
  // softcap: float32 logits, Gemma 2's cap of 30 over logits up to +-100.
  const int64_t n = 3, vocab = 1000;
  auto l_h = random_normal(size_t(n * vocab), rng, 60.f);
  Tensor l = upload(l_h, DType::f32, {n, vocab});
  gpu->softcap(l, 30.f);
  auto ref = l_h;
  cpu.softcap(host_view(ref, {n, vocab}), 30.f);
  expect_close(download(l), ref, tolerance_for(DType::f32, {1e-5, 1e-6}), "softcap");
}

// A table of `half` frequencies; the long one differs in every entry (LongRoPE's factors).
std::vector<float> freqs(int64_t half, float base, float factor) {
  std::vector<float> f(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) f[size_t(j)] = std::pow(base, -float(j) / float(half)) / (factor + 0.01f * j);
  return f;
}

// rope and rope_store_kv on q/k/v views inside qkv, for rotary_dim < head_dim (odd and even
// halves: the kernel's one- and two-element paths) and two tables switched at long_from.
TEST_F(CudaFamilyOps, RopePartialRotaryAndLongTables) {
  struct Case {
    int64_t d, rot;
    bool long_table;
  };
  const Case cases[] = {{96, 96, true}, {96, 72, false}, {128, 96, true}, {64, 62, true}, {256, 128, true}};
  for (DType t : kDtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(c.d) + " rot " + std::to_string(c.rot) +
                   (c.long_table ? " long" : ""));
      const int64_t n = 9, heads = 4, kv = 2, d = c.d, half = c.rot / 2, width = (heads + 2 * kv) * d, n_slots = 16;
      const int long_from = 4096;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng), t);
      std::vector<int32_t> pos = {0, 1, 4095, 4096, 4097, 10000, 17, 30000, 4095};
      std::vector<int32_t> slots = {3, 0, 15, 7, 8, 1, 2, 4, 5};
      auto f_short = freqs(half, 10000.f, 1.f), f_long = freqs(half, 10000.f, 4.f);
      RopeTables tables(upload(f_short, DType::f32, {half}),
                        c.long_table ? upload(f_long, DType::f32, {half}) : Tensor{}, long_from);
      RopeTables host_tables(host_view(f_short, {half}), c.long_table ? host_view(f_long, {half}) : Tensor{},
                             long_from);
      auto heads_of = [&](Tensor x, int64_t h0, int64_t nh) {
        return x.slice_cols(h0 * d, nh * d).unflatten_last(nh, d);
      };
      for (bool store : {false, true}) {
        Tensor qkv = upload(qkv_h, t, {n, width});
        Tensor kc = empty(t, {n_slots, kv, d}), vc = empty(t, {n_slots, kv, d});
        if (store)
          gpu->rope_store_kv(heads_of(qkv, 0, heads), heads_of(qkv, heads, kv), heads_of(qkv, heads + kv, kv),
                             upload_index(pos, {n}), tables, kc, vc, upload_index(slots, {n}));
        else
          gpu->rope(heads_of(qkv, 0, heads), heads_of(qkv, heads, kv), upload_index(pos, {n}), tables);
        auto ref = qkv_h;
        Tensor r = host_view(ref, {n, width});
        cpu.rope(heads_of(r, 0, heads), heads_of(r, heads, kv), host_index(pos, {n}), host_tables);
        // Angles up to 30000 rad: sin/cos of a large float argument carry ~1e-6 absolute error.
        expect_close(download(qkv), round_to(ref, t), tolerance_for(t, {1e-5, 5e-6}), store ? "rope_store_kv" : "rope");
        if (!store) continue;
        const auto got_k = download(kc), got_v = download(vc);
        std::vector<float> gk, gv, wk, wv;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t e = 0; e < kv * d; ++e) {
            gk.push_back(got_k[size_t(slots[size_t(i)] * kv * d + e)]);
            gv.push_back(got_v[size_t(slots[size_t(i)] * kv * d + e)]);
            wk.push_back(ref[size_t(i * width + heads * d + e)]);
            wv.push_back(ref[size_t(i * width + (heads + kv) * d + e)]);
          }
        expect_close(gk, round_to(wk, t), tolerance_for(t, {1e-5, 5e-6}), "k_cache (rotated and pass-through dims)");
        expect_close(gv, round_to(wv, t), tolerance_for(t), "v_cache");
      }
    }
}

// One row: rms_norm_qkv_rope_store fuses norm, projection, RoPE and the store into the GEMV;
// with partial rotary and a long table it must still equal the CPU's composed op.
TEST_F(CudaFamilyOps, FusedNormQkvRopeStoreWithPartialRotaryAndLongTable) {
  for (DType t : {DType::bf16, DType::f16})
    for (int32_t position : {100, 5000})
      for (int64_t rot : {int64_t(96), int64_t(48)}) {  // Phi-4-mini's 0.75 of 128 (96) and a half
        SCOPED_TRACE(std::string(short_name(t)) + " position " + std::to_string(position) + " rot " +
                     std::to_string(rot));
        const int64_t n = 1, h = 1024, d = 128, heads = 4, kv = 2, width = (heads + 2 * kv) * d, n_slots = 5,
                      half = rot / 2;
        auto x_h = round_to(random_normal(size_t(n * h), rng, 2.f), t);
        auto g_h = round_to(random_normal(size_t(h), rng), t);
        auto w_h = round_to(random_normal(size_t(width * h), rng, 1.f / std::sqrt(float(h))), t);
        std::vector<int32_t> pos = {position}, slots = {3};
        auto f_short = freqs(half, 10000.f, 1.f), f_long = freqs(half, 10000.f, 3.f);
        RopeStoreArgs r;
        r.n_heads = int(heads);
        r.positions = upload_index(pos, {n});
        r.inv_freq = upload(f_short, DType::f32, {half});
        r.inv_freq_long = upload(f_long, DType::f32, {half});
        r.long_from = 4096;
        r.k_cache = empty(t, {n_slots, kv, d});
        r.v_cache = empty(t, {n_slots, kv, d});
        r.slots = upload_index(slots, {n});
        Tensor qkv = empty(t, {n, width}), normed = empty(t, {n, h});
        gpu->rms_norm_qkv_rope_store(qkv, normed, upload(x_h, t, {n, h}), upload(g_h, t, {h}), 1e-5f,
                                     upload(w_h, t, {width, h}), Tensor{}, r);
        std::vector<float> qkv_ref(size_t(n * width)), normed_ref(size_t(n * h));
        std::vector<float> kc_ref(size_t(n_slots * kv * d), NAN), vc_ref = kc_ref;
        RopeStoreArgs rr = r;
        rr.positions = host_index(pos, {n});
        rr.inv_freq = host_view(f_short, {half});
        rr.inv_freq_long = host_view(f_long, {half});
        rr.k_cache = host_view(kc_ref, {n_slots, kv, d});
        rr.v_cache = host_view(vc_ref, {n_slots, kv, d});
        rr.slots = host_index(slots, {n});
        cpu.rms_norm_qkv_rope_store(host_view(qkv_ref, {n, width}), host_view(normed_ref, {n, h}),
                                    host_view(x_h, {n, h}), host_view(g_h, {h}), 1e-5f, host_view(w_h, {width, h}),
                                    Tensor{}, rr);
        const Tolerance tol = tolerance_for(t, {1e-4, 1e-5}, {1e-2, 1e-2}, {3e-2, 3e-2});  // two roundings in bf16
        expect_close(download(qkv), qkv_ref, tol, "qkv");
        const auto got_k = download(r.k_cache), got_v = download(r.v_cache);
        const size_t at = size_t(slots[0] * kv * d), len = size_t(kv * d);
        expect_close(std::vector<float>(got_k.begin() + long(at), got_k.begin() + long(at + len)),
                     std::vector<float>(kc_ref.begin() + long(at), kc_ref.begin() + long(at + len)), tol, "k_cache");
        expect_close(std::vector<float>(got_v.begin() + long(at), got_v.begin() + long(at + len)),
                     std::vector<float>(vc_ref.begin() + long(at), vc_ref.begin() + long(at + len)), tol, "v_cache");
      }
}

// rms_norm_gate_up_act with gelu_tanh: one row (the fused GEMV epilogue) and several rows
// (GEMM + gated_act) against the CPU.
TEST_F(CudaFamilyOps, NormGateUpGeluMatchesCpu) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE(std::string(short_name(t)) + " n " + std::to_string(n));
      const int64_t h = 1024, inter = 512;
      auto x_h = round_to(random_normal(size_t(n * h), rng, 2.f), t);
      auto g_h = round_to(random_normal(size_t(h), rng), t);
      auto w_h = round_to(random_normal(size_t(2 * inter * h), rng, 1.f / std::sqrt(float(h))), t);
      Tensor act = empty(t, {n, inter}), gate_up = empty(t, {n, 2 * inter}), normed = empty(t, {n, h});
      gpu->rms_norm_gate_up_act(act, gate_up, normed, upload(x_h, t, {n, h}), upload(g_h, t, {h}), 1e-6f,
                                upload(w_h, t, {2 * inter, h}), Activation::gelu_tanh);
      std::vector<float> act_ref(size_t(n * inter)), gu_ref(size_t(n * 2 * inter)), normed_ref(size_t(n * h));
      cpu.rms_norm_gate_up_act(host_view(act_ref, {n, inter}), host_view(gu_ref, {n, 2 * inter}),
                               host_view(normed_ref, {n, h}), host_view(x_h, {n, h}), host_view(g_h, {h}), 1e-6f,
                               host_view(w_h, {2 * inter, h}), Activation::gelu_tanh);
      expect_close(download(act), act_ref, tolerance_for(t, {1e-4, 1e-5}, {1e-2, 1e-2}, {3e-2, 3e-2}),
                   "gelu_tanh(gate) * up");
    }
}

// The new ops record into a graph (no allocation, no host sync) and replay with fresh inputs.
TEST_F(CudaFamilyOps, NewOpsInsideAGraph) {
  const DType t = DType::bf16;
  const int64_t n = 4, d = 256, inter = 128, vocab = 300;
  Tensor x = empty(t, {n, d}), res = empty(t, {n, d}), w = empty(t, {d}), gu = empty(t, {n, 2 * inter}),
         act = empty(t, {n, inter}), logits = empty(DType::f32, {n, vocab});
  gpu->begin_capture();
  gpu->scale(x, 16.f);
  gpu->rms_norm_add(res, x, w, 1e-6f);
  gpu->gated_act(act, gu, Activation::gelu_tanh);
  gpu->softcap(logits, 30.f);
  std::unique_ptr<Graph> g = gpu->end_capture();
  auto x_h = round_to(random_normal(size_t(n * d), rng), t), res_h = round_to(random_normal(size_t(n * d), rng), t),
       w_h = round_to(random_normal(size_t(d), rng), t), gu_h = round_to(random_normal(size_t(n * 2 * inter), rng), t),
       l_h = random_normal(size_t(n * vocab), rng, 50.f);
  auto put = [&](const Tensor& dst, const std::vector<float>& v) {
    Tensor tmp = upload(v, dst.dtype, {dst.numel()});
    gpu->copy_d2d(dst.data, tmp.data, dst.nbytes());
  };
  put(x, x_h);
  put(res, res_h);
  put(w, w_h);
  put(gu, gu_h);
  put(logits, l_h);
  gpu->replay(*g);
  gpu->synchronize();
  cpu.scale(host_view(x_h, {n, d}), 16.f);
  x_h = round_to(x_h, t);
  cpu.rms_norm_add(host_view(res_h, {n, d}), host_view(x_h, {n, d}), host_view(w_h, {d}), 1e-6f);
  std::vector<float> act_ref(size_t(n * inter));
  cpu.gated_act(host_view(act_ref, {n, inter}), host_view(gu_h, {n, 2 * inter}), Activation::gelu_tanh);
  cpu.softcap(host_view(l_h, {n, vocab}), 30.f);
  expect_close(download(x), x_h, tolerance_for(t), "scale (graph)");
  expect_close(download(res), round_to(res_h, t), tolerance_for(t), "rms_norm_add (graph)");
  expect_close(download(act), round_to(act_ref, t), tolerance_for(t), "gated_act (graph)");
  expect_close(download(logits), l_h, tolerance_for(DType::f32), "softcap (graph)");
}

TEST_F(CudaFamilyOps, BadArgumentsThrow) {
  Tensor a = empty(DType::bf16, {4, 16}), b = empty(DType::bf16, {4, 7});
  EXPECT_THROW(gpu->gated_act(b, a, Activation::gelu_tanh), Error);               // shape
  EXPECT_THROW(gpu->softcap(a, 30.f), Error);                                     // softcap takes float32 logits
  EXPECT_THROW(gpu->rms_norm_add(a, a, empty(DType::bf16, {16}), 1e-6f), Error);  // residual is x
  EXPECT_THROW(gpu->scale(a, NAN), Error);
}

}  // namespace
}  // namespace seam::test
