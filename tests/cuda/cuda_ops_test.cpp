// Every elementwise / normalisation / copy op of the CUDA backend against the CPU
// reference, on fresh random inputs, poisoned outputs, several shapes and all
// activation dtypes (f32, f16, bf16), including strided views inside fused buffers.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "cuda_test_util.h"

namespace seam::test {
namespace {

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

class CudaOps : public CudaTest {};

TEST_F(CudaOps, FillWritesEveryDtype) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Tensor x = empty(t, {3, 37});
    gpu->fill(x, 1.5f);
    for (float v : download(x)) ASSERT_EQ(v, 1.5f) << short_name(t);
  }
  Tensor i = empty(DType::i32, {41});
  gpu->fill(i, 17.f);
  for (int32_t v : download_i32(i)) ASSERT_EQ(v, 17);
}

TEST_F(CudaOps, EmbeddingAndGatherRowsCopyRowsExactly) {
  for (DType t : kDtypes) {
    for (int64_t hidden : {8, 37, 64, 4096}) {
      SCOPED_TRACE(std::string(short_name(t)) + " hidden " + std::to_string(hidden));
      const int64_t vocab = 300, n = 13;
      auto table_h = round_to(random_normal(size_t(vocab * hidden), rng), t);
      std::vector<int32_t> ids(n);
      std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
      for (auto& id : ids) id = pick(rng);
      ids[3] = -1;            // padded rows: out of range reads row 0, like the CPU reference
      ids[7] = int32_t(vocab) + 5;
      Tensor table = upload(table_h, t, {vocab, hidden});
      Tensor ids_d = upload_index(ids, {n});
      Tensor out = empty(t, {n, hidden});
      gpu->embedding(out, ids_d, table);
      std::vector<float> ref(static_cast<size_t>(n * hidden));
      cpu.embedding(host_view(ref, {n, hidden}), host_index(ids, {n}), host_view(table_h, {vocab, hidden}));
      EXPECT_EQ(download(out), ref);

      // gather_rows from a strided view (the middle columns of a wider buffer).
      const int64_t wide = hidden + 6;
      auto x_h = round_to(random_normal(size_t(vocab * wide), rng), t);
      Tensor x_buf = upload(x_h, t, {vocab, wide});
      Tensor x = x_buf.slice_cols(2, hidden);
      Tensor g = empty(t, {n, hidden});
      gpu->gather_rows(g, x, ids_d);
      std::vector<float> g_ref(static_cast<size_t>(n * hidden));
      cpu.gather_rows(host_view(g_ref, {n, hidden}), host_view(x_h, {vocab, wide}).slice_cols(2, hidden),
                      host_index(ids, {n}));
      EXPECT_EQ(download(g), g_ref);
    }
  }
}

TEST_F(CudaOps, RmsNormMatchesCpu) {
  for (DType t : kDtypes) {
    for (int64_t d : {8, 37, 128, 4096, 5120}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d));
      const int64_t n = 19, wide = d + 8;
      // x is a strided view (columns [4, 4+d) of a wider buffer).
      auto x_h = round_to(random_normal(size_t(n * wide), rng, 2.f), t);
      auto w_h = round_to(random_normal(size_t(d), rng), t);
      Tensor x_buf = upload(x_h, t, {n, wide});
      Tensor w = upload(w_h, t, {d});
      Tensor out = empty(t, {n, d});
      gpu->rms_norm(out, x_buf.slice_cols(4, d), w, 1e-5f);
      std::vector<float> ref(static_cast<size_t>(n * d));
      cpu.rms_norm(host_view(ref, {n, d}), host_view(x_h, {n, wide}).slice_cols(4, d), host_view(w_h, {d}), 1e-5f);
      expect_close(download(out), round_to(ref, t), tolerance_for(t), "rms_norm");
    }
  }
}

// Qwen3 q/k norm: per-head norm in place on [n, heads, d] views of q inside qkv.
TEST_F(CudaOps, PerHeadRmsNormInPlaceOnQkvView) {
  for (DType t : kDtypes) {
    for (int64_t d : {64, 128}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d));
      const int64_t n = 11, heads = 4, kv_heads = 2, width = (heads + 2 * kv_heads) * d;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng), t);
      auto w_h = round_to(random_normal(size_t(d), rng), t);
      Tensor qkv = upload(qkv_h, t, {n, width});
      Tensor w = upload(w_h, t, {d});
      Tensor q = qkv.slice_cols(0, heads * d).unflatten_last(heads, d);
      Tensor k = qkv.slice_cols(heads * d, kv_heads * d).unflatten_last(kv_heads, d);
      gpu->rms_norm(q, q, w, 1e-6f);
      gpu->rms_norm(k, k, w, 1e-6f);
      auto ref = qkv_h;
      Tensor rq = host_view(ref, {n, width}).slice_cols(0, heads * d).unflatten_last(heads, d);
      Tensor rk = host_view(ref, {n, width}).slice_cols(heads * d, kv_heads * d).unflatten_last(kv_heads, d);
      cpu.rms_norm(rq, rq, host_view(w_h, {d}), 1e-6f);
      cpu.rms_norm(rk, rk, host_view(w_h, {d}), 1e-6f);
      // The v columns must be untouched: compare the whole buffer.
      expect_close(download(qkv), round_to(ref, t), tolerance_for(t), "per-head rms_norm");
    }
  }
}

TEST_F(CudaOps, RopeRotatesQkViewsInsideQkv) {
  for (DType t : kDtypes) {
    // 160 heads at d 128: more (head, 8-pair) items than a block's 1,024 threads (two passes).
    for (const auto& [d, heads] : {std::pair<int64_t, int64_t>{8, 6}, {64, 6}, {128, 6}, {128, 160}}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d) + " heads " + std::to_string(heads));
      const int64_t n = 23, kv_heads = 2, width = (heads + 2 * kv_heads) * d;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng), t);
      std::vector<int32_t> pos(n);
      std::uniform_int_distribution<int32_t> pick(0, 32767);
      for (auto& p : pos) p = pick(rng);
      std::vector<float> inv_freq(static_cast<size_t>(d / 2));
      for (int64_t j = 0; j < d / 2; ++j) inv_freq[j] = std::pow(500000.f, -2.f * float(j) / float(d));
      Tensor qkv = upload(qkv_h, t, {n, width});
      Tensor pos_d = upload_index(pos, {n});
      Tensor freq_d = upload(inv_freq, DType::f32, {d / 2});
      gpu->rope(qkv.slice_cols(0, heads * d).unflatten_last(heads, d),
                qkv.slice_cols(heads * d, kv_heads * d).unflatten_last(kv_heads, d), pos_d, freq_d);
      auto ref = qkv_h;
      Tensor r = host_view(ref, {n, width});
      cpu.rope(r.slice_cols(0, heads * d).unflatten_last(heads, d),
               r.slice_cols(heads * d, kv_heads * d).unflatten_last(kv_heads, d), host_index(pos, {n}),
               host_view(inv_freq, {d / 2}));
      // Angles up to 32767 rad: sin/cos of a large float argument carry ~1e-6 absolute error.
      expect_close(download(qkv), round_to(ref, t), tolerance_for(t, {1e-5, 5e-6}), "rope");
    }
  }
}

// RoPE at positions up to 100,000 with hi + lo tables (rope_angle.h) and LongRoPE's long
// table from 50,000 on, partial rotary too: the kernel reduces the angle exactly as the CPU
// does (the same double formula), so only sincosf vs std::sin/cos (an ulp or two) and the
// dtype's rounding separate them, at any position. With the old float32 angle, positions near
// 100,000 (ulp 0.0078 rad) would miss by ~1e-2 on these values.
TEST_F(CudaOps, RopeAtLargePositionsWithHiLoTablesMatchesCpu) {
  for (DType t : kDtypes) {
    for (const auto& [d, rot] : {std::pair<int64_t, int64_t>{128, 128}, {96, 64}}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d) + " rot " + std::to_string(rot));
      const int64_t n = 37, heads = 4, kv_heads = 2, width = (heads + 2 * kv_heads) * d, n_slots = 64;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng, 3.f), t);
      std::vector<int32_t> pos(n), slots(n);
      std::uniform_int_distribution<int32_t> pick(0, 100000);
      for (auto& p : pos) p = pick(rng);
      pos[0] = 99999;
      pos[1] = 100000;
      pos[2] = 49999;  // the short table's last position
      pos[3] = 50000;  // the long table's first
      for (int64_t i = 0; i < n; ++i) slots[size_t(i)] = int32_t(i);
      HiLoTable f = hi_lo_table(rot / 2, 10000.0), fl = hi_lo_table(rot / 2, 10000.0, 7.3);
      const auto dev = [&](std::vector<float>& v) { return upload(v, DType::f32, {rot / 2}); };
      const RopeTables tables(dev(f.hi), dev(fl.hi), 50000, dev(f.lo), dev(fl.lo));
      auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
        return x.slice_cols(from * d, count * d).unflatten_last(count, d);
      };
      Tensor qkv = upload(qkv_h, t, {n, width}), qkv_s = upload(qkv_h, t, {n, width});
      gpu->rope(heads_of(qkv, 0, heads), heads_of(qkv, heads, kv_heads), upload_index(pos, {n}), tables);
      Tensor kc = empty(t, {n_slots, kv_heads, d}), vc = empty(t, {n_slots, kv_heads, d});
      gpu->rope_store_kv(heads_of(qkv_s, 0, heads), heads_of(qkv_s, heads, kv_heads),
                         heads_of(qkv_s, heads + kv_heads, kv_heads), upload_index(pos, {n}), tables, kc, vc,
                         upload_index(slots, {n}));
      auto ref = qkv_h;
      Tensor r = host_view(ref, {n, width});
      const auto host = [&](std::vector<float>& v) { return host_view(v, {rot / 2}); };
      cpu.rope(heads_of(r, 0, heads), heads_of(r, heads, kv_heads), host_index(pos, {n}),
               RopeTables(host(f.hi), host(fl.hi), 50000, host(f.lo), host(fl.lo)));
      const auto want = round_to(ref, t);
      const Tolerance tol = tolerance_for(t, {1e-5, 2e-6});
      expect_close(download(qkv), want, tol, "rope");
      expect_close(download(qkv_s), want, tol, "rope_store_kv q/k");
      // The cache holds each row's rotated k (slot i = row i).
      const auto kg = download(kc);
      std::vector<float> kg_rows, kr_rows;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < kv_heads * d; ++e) {
          kg_rows.push_back(kg[size_t(i * kv_heads * d + e)]);
          kr_rows.push_back(want[size_t(i * width + heads * d + e)]);
        }
      expect_close(kg_rows, kr_rows, tol, "rope_store_kv k_cache");
    }
  }
}

TEST_F(CudaOps, SiluMulMatchesCpu) {
  for (DType t : kDtypes) {
    for (int64_t inter : {3, 172, 14336}) {
      SCOPED_TRACE(std::string(short_name(t)) + " inter " + std::to_string(inter));
      const int64_t n = 7;
      auto gu_h = round_to(random_normal(size_t(n * 2 * inter), rng, 3.f), t);
      Tensor gu = upload(gu_h, t, {n, 2 * inter});
      Tensor out = empty(t, {n, inter});
      gpu->silu_mul(out, gu);
      std::vector<float> ref(static_cast<size_t>(n * inter));
      cpu.silu_mul(host_view(ref, {n, inter}), host_view(gu_h, {n, 2 * inter}));
      expect_close(download(out), round_to(ref, t), tolerance_for(t), "silu_mul");
    }
  }
}

TEST_F(CudaOps, StoreKvWritesSlotsFromQkvViews) {
  for (DType t : kDtypes) {
    for (int64_t d : {8, 128}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d));
      const int64_t n = 17, heads = 4, kv = 2, width = (heads + 2 * kv) * d, n_slots = 64;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng), t);
      std::vector<int32_t> perm(n_slots);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      std::vector<int32_t> slots(perm.begin(), perm.begin() + n);
      Tensor qkv = upload(qkv_h, t, {n, width});
      Tensor slots_d = upload_index(slots, {n});
      Tensor kc = empty(t, {n_slots, kv, d}), vc = empty(t, {n_slots, kv, d});  // NaN-poisoned
      Tensor k = qkv.slice_cols(heads * d, kv * d).unflatten_last(kv, d);
      Tensor v = qkv.slice_cols((heads + kv) * d, kv * d).unflatten_last(kv, d);
      gpu->store_kv(kc, vc, k, v, slots_d);
      std::vector<float> kc_ref(size_t(n_slots * kv * d), NAN), vc_ref = kc_ref;
      Tensor r = host_view(qkv_h, {n, width});
      cpu.store_kv(host_view(kc_ref, {n_slots, kv, d}), host_view(vc_ref, {n_slots, kv, d}),
                   r.slice_cols(heads * d, kv * d).unflatten_last(kv, d),
                   r.slice_cols((heads + kv) * d, kv * d).unflatten_last(kv, d), host_index(slots, {n}));
      // Written slots equal exactly; unwritten ones still hold the poison.
      const auto kg = download(kc), vg = download(vc);
      for (size_t i = 0; i < kg.size(); ++i) {
        ASSERT_EQ(std::isnan(kg[i]), std::isnan(kc_ref[i])) << i;
        if (!std::isnan(kc_ref[i])) ASSERT_EQ(kg[i], kc_ref[i]) << i;
        if (!std::isnan(vc_ref[i])) ASSERT_EQ(vg[i], vc_ref[i]) << i;
      }
    }
  }
}

// The fused decode op: q and k rotated in place, the rotated k and v stored at their slots,
// one out-of-range slot skipped; compared with the CPU's rope then store_kv.
TEST_F(CudaOps, RopeStoreKvEqualsRopeThenStoreKv) {
  for (DType t : kDtypes) {
    for (int64_t d : {8, 64, 128}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d));
      const int64_t n = 13, heads = 6, kv = 2, width = (heads + 2 * kv) * d, n_slots = 40;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng), t);
      std::vector<int32_t> pos(n), perm(n_slots);
      std::uniform_int_distribution<int32_t> pick(0, 8191);
      for (auto& p : pos) p = pick(rng);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      std::vector<int32_t> slots(perm.begin(), perm.begin() + n);
      slots[4] = int32_t(n_slots);  // out of range: skipped
      std::vector<float> inv_freq(static_cast<size_t>(d / 2));
      for (int64_t j = 0; j < d / 2; ++j) inv_freq[j] = std::pow(10000.f, -2.f * float(j) / float(d));
      Tensor qkv = upload(qkv_h, t, {n, width});
      Tensor kc = empty(t, {n_slots, kv, d}), vc = empty(t, {n_slots, kv, d});  // NaN-poisoned
      auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
        return x.slice_cols(from * d, count * d).unflatten_last(count, d);
      };
      gpu->rope_store_kv(heads_of(qkv, 0, heads), heads_of(qkv, heads, kv), heads_of(qkv, heads + kv, kv),
                         upload_index(pos, {n}), upload(inv_freq, DType::f32, {d / 2}), kc, vc,
                         upload_index(slots, {n}));
      auto ref = qkv_h;
      std::vector<float> kc_ref(size_t(n_slots * kv * d), NAN), vc_ref = kc_ref;
      Tensor r = host_view(ref, {n, width});
      cpu.rope(heads_of(r, 0, heads), heads_of(r, heads, kv), host_index(pos, {n}), host_view(inv_freq, {d / 2}));
      // The CPU reference rounds the rotated k to t, as the GPU stores it.
      const auto rounded = round_to(ref, t);
      std::copy(rounded.begin(), rounded.end(), ref.begin());  // in place: r views ref's storage
      for (int64_t i = 0; i < n; ++i) {  // the CPU op asserts on bad slots: store the valid rows only
        if (i == 4) continue;
        std::vector<int32_t> one = {slots[size_t(i)]};
        const Tensor row = r.slice_rows(i, 1);
        cpu.store_kv(host_view(kc_ref, {n_slots, kv, d}), host_view(vc_ref, {n_slots, kv, d}),
                     heads_of(row, heads, kv), heads_of(row, heads + kv, kv), host_index(one, {1}));
      }
      const Tolerance tol = tolerance_for(t, {1e-5, 5e-6});
      expect_close(download(qkv), ref, tol, "rope_store_kv q/k");
      const auto kg = download(kc), vg = download(vc);
      std::vector<float> kg_w, kr_w;
      for (size_t i = 0; i < kg.size(); ++i) {
        ASSERT_EQ(std::isnan(kg[i]), std::isnan(kc_ref[i])) << i;
        ASSERT_EQ(std::isnan(vg[i]), std::isnan(vc_ref[i])) << i;
        if (std::isnan(kc_ref[i])) continue;
        kg_w.push_back(kg[i]);
        kr_w.push_back(kc_ref[i]);
        ASSERT_EQ(vg[i], vc_ref[i]) << i;  // v is copied bit for bit
      }
      EXPECT_EQ(kg_w.size(), size_t((n - 1) * kv * d));
      expect_close(kg_w, kr_w, tol, "rope_store_kv k_cache");
    }
  }
}

// Attention's whole input stage against the CPU reference (norm, projection, RoPE, KV store).
// One row in f16/bf16 runs as one fused GEMV on CUDA; more rows and f32 run the op sequence.
TEST_F(CudaOps, NormQkvRopeStoreMatchesCpu) {
  struct Case {
    int64_t n, hidden, d;
    bool bias, slot_in_pool;
  };
  // One row: the GEMV's K split into 1 (hidden 256, 1024), 2 (2048) and 4 (4096) slices.
  const Case cases[] = {{1, 256, 64, false, true},  {1, 1024, 128, true, true}, {1, 2048, 64, true, true},
                        {1, 4096, 128, false, true}, {1, 256, 128, true, false}, {3, 512, 64, true, true}};
  for (DType t : kDtypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(short_name(t)) + " n " + std::to_string(c.n) + " hidden " + std::to_string(c.hidden) +
                   " d " + std::to_string(c.d) + (c.bias ? " bias" : "") + (c.slot_in_pool ? "" : " slot -1"));
      const int64_t n = c.n, h = c.hidden, d = c.d, heads = 4, kv = 2, width = (heads + 2 * kv) * d, n_slots = 9;
      auto x_h = round_to(random_normal(size_t(n * h), rng, 2.f), t);
      auto g_h = round_to(random_normal(size_t(h), rng), t);
      auto w_h = round_to(random_normal(size_t(width * h), rng, 1.f / std::sqrt(float(h))), t);
      auto b_h = round_to(random_normal(size_t(width), rng), t);
      std::vector<int32_t> pos(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        pos[size_t(i)] = int32_t(99983 - 41113 * i);  // up to ~100,000: the angle's reduction matters
        slots[size_t(i)] = c.slot_in_pool ? int32_t((5 + 3 * i) % n_slots) : -1;
      }
      HiLoTable freq = hi_lo_table(d / 2, 500000.0);  // hi + lo (rope_angle.h)
      std::vector<float>& inv_freq = freq.hi;

      RopeStoreArgs r;
      r.n_heads = int(heads);
      r.positions = upload_index(pos, {n});
      r.inv_freq = upload(inv_freq, DType::f32, {d / 2});
      r.inv_freq_lo = upload(freq.lo, DType::f32, {d / 2});
      r.k_cache = empty(t, {n_slots, kv, d});  // NaN-poisoned: untouched slots stay NaN
      r.v_cache = empty(t, {n_slots, kv, d});
      r.slots = upload_index(slots, {n});
      Tensor qkv = empty(t, {n, width}), normed = empty(t, {n, h});
      gpu->rms_norm_qkv_rope_store(qkv, normed, upload(x_h, t, {n, h}), upload(g_h, t, {h}), 1e-5f,
                                   upload(w_h, t, {width, h}), c.bias ? upload(b_h, t, {width}) : Tensor{}, r);

      std::vector<float> qkv_ref(size_t(n * width)), normed_ref(size_t(n * h));
      std::vector<float> kc_ref(size_t(n_slots * kv * d), NAN), vc_ref = kc_ref;
      RopeStoreArgs rr;
      rr.n_heads = int(heads);
      rr.positions = host_index(pos, {n});
      rr.inv_freq = host_view(inv_freq, {d / 2});
      rr.inv_freq_lo = host_view(freq.lo, {d / 2});
      rr.k_cache = host_view(kc_ref, {n_slots, kv, d});
      rr.v_cache = host_view(vc_ref, {n_slots, kv, d});
      rr.slots = host_index(slots, {n});
      if (c.slot_in_pool) {
        cpu.rms_norm_qkv_rope_store(host_view(qkv_ref, {n, width}), host_view(normed_ref, {n, h}),
                                    host_view(x_h, {n, h}), host_view(g_h, {h}), 1e-5f, host_view(w_h, {width, h}),
                                    c.bias ? host_view(b_h, {width}) : Tensor{}, rr);
      } else {  // the CPU store asserts on a slot outside the pool: run its parts without the store
        Tensor qr = host_view(qkv_ref, {n, width});
        cpu.rms_norm_linear(qr, host_view(normed_ref, {n, h}), host_view(x_h, {n, h}), host_view(g_h, {h}), 1e-5f,
                            host_view(w_h, {width, h}), c.bias ? host_view(b_h, {width}) : Tensor{});
        cpu.rope(qr.slice_cols(0, heads * d).unflatten_last(heads, d),
                 qr.slice_cols(heads * d, kv * d).unflatten_last(kv, d), rr.positions, rr.tables());
      }
      const Tolerance tol = tolerance_for(t, {1e-4, 1e-5}, {1e-2, 1e-2}, {3e-2, 3e-2});  // two roundings in bf16
      expect_close(download(qkv), qkv_ref, tol, "qkv (q, k rotated; v)");
      for (const auto& [got, want, what] : {std::tuple{download(r.k_cache), kc_ref, "k_cache"},
                                            std::tuple{download(r.v_cache), vc_ref, "v_cache"}}) {
        std::vector<float> got_w, want_w;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << what << " element " << i;
          if (std::isnan(want[i])) continue;
          got_w.push_back(got[i]);
          want_w.push_back(want[i]);
        }
        EXPECT_EQ(got_w.size(), c.slot_in_pool ? size_t(n * kv * d) : size_t(0)) << what;
        expect_close(got_w, want_w, tol, what);
      }
    }
  }
}

TEST_F(CudaOps, StoreKvSkipsOutOfRangeSlots) {
  const int64_t n = 3, kv = 2, d = 64, n_slots = 8;
  auto k_h = random_normal(size_t(n * kv * d), rng);
  Tensor k = upload(k_h, DType::f32, {n, kv, d});
  std::vector<int32_t> slots = {5, -1, 100};
  Tensor slots_d = upload_index(slots, {n});
  Tensor kc = empty(DType::f32, {n_slots, kv, d}), vc = empty(DType::f32, {n_slots, kv, d});
  gpu->store_kv(kc, vc, k, k, slots_d);
  const auto kg = download(kc);
  for (int64_t s = 0; s < n_slots; ++s)
    for (int64_t j = 0; j < kv * d; ++j) {
      const float g = kg[size_t(s * kv * d + j)];
      if (s == 5)
        ASSERT_EQ(g, k_h[size_t(j)]);
      else
        ASSERT_TRUE(std::isnan(g)) << "slot " << s << " written";
    }
}

TEST_F(CudaOps, ApplyPenaltiesMatchesCpu) {
  const int64_t n = 5, vocab = 1000;
  auto logits_h = random_normal(size_t(n * vocab), rng, 4.f);
  std::vector<int32_t> indptr = {0}, tokens, counts;
  std::uniform_int_distribution<int32_t> pick_count(0, 4);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    const int m = std::vector<int>{3, 40, 0, 80, 10}[size_t(r)];  // row 2 has no entries
    for (int i = 0; i < m; ++i) {
      tokens.push_back(ids[size_t(i)]);
      counts.push_back(pick_count(rng));
    }
    if (r == 4) tokens.back() = int32_t(vocab) + 3;  // out of range: ignored
    indptr.push_back(int32_t(tokens.size()));
  }
  std::vector<float> freq = {0.5f, 0.f, 1.f, -0.3f, 0.2f}, pres = {0.f, 0.7f, 0.5f, 0.1f, -0.4f},
                     rep = {1.f, 1.3f, 1.f, 0.8f, 1.1f};
  const int64_t nnz = int64_t(tokens.size());
  Tensor logits = upload(logits_h, DType::f32, {n, vocab});
  PenaltyBatch pb;
  pb.n = int(n);
  pb.nnz = int(nnz);
  pb.indptr = upload_index(indptr, {n + 1});
  pb.tokens = upload_index(tokens, {nnz});
  pb.out_counts = upload_index(counts, {nnz});
  pb.frequency = upload(freq, DType::f32, {n});
  pb.presence = upload(pres, DType::f32, {n});
  pb.repetition = upload(rep, DType::f32, {n});
  gpu->apply_penalties(logits, pb);
  PenaltyBatch hb = pb;
  hb.indptr = host_index(indptr, {n + 1});
  hb.tokens = host_index(tokens, {nnz});
  hb.out_counts = host_index(counts, {nnz});
  hb.frequency = host_view(freq, {n});
  hb.presence = host_view(pres, {n});
  hb.repetition = host_view(rep, {n});
  auto ref = logits_h;
  cpu.apply_penalties(host_view(ref, {n, vocab}), hb);
  expect_close(download(logits), ref, {1e-6, 1e-7}, "apply_penalties");
  EXPECT_NE(ref, logits_h);  // the case changes something
}

TEST_F(CudaOps, BadInputsThrowClearErrors) {
  Tensor a = empty(DType::bf16, {4, 8});
  Tensor w = empty(DType::f32, {8});
  EXPECT_THROW(gpu->rms_norm(a, a, w, 1e-5f), Error);  // dtype mismatch
  std::vector<float> host(32);
  EXPECT_THROW(gpu->silu_mul(host_view(host, {4, 8}), a), Error);  // host tensor
  Tensor b = empty(DType::bf16, {4, 5});
  EXPECT_THROW(gpu->silu_mul(b, a), Error);  // shape
}

}  // namespace
}  // namespace seam::test
