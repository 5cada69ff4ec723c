// The batch-1..4 FP8 GEMV (fp8_gemv.h) against the CPU reference on each inner loop
// (SEAM_FP8_GEMV): every scheme pair at each batch it serves, its
// fusions (RMSNorm, GLU, RoPE + KV store) equal to their decompositions bit for bit, exact
// integer sums, graph replays (fp8_test_fixture.h: the fixtures).
#include <cuda_runtime.h>

#include "fp8_test_fixture.h"

namespace seam::test {
namespace {

// The GEMV alone (launch_fp8_gemv: quantization fused into its prologue) for every scheme pair
// at each batch it serves, odd output counts (inactive rows of the last block), a 4096-wide
// K, more row tiles than the persistent grid (a 14,336-wide K too); and what it refuses.
TEST_P(CudaFp8Gemv, GemvMatchesCpu) {
  const auto gemv_op = [&](Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool acc) {
    ASSERT_TRUE(cuda::fp8_gemv_applies(out, x, w));
    gemv(out, x, w, bias, acc);
  };
  const Tolerance f32 = f32_bound();
  // Rows of more tiles (16 rows each) than the grid, the last tile partly inactive.
  const int64_t many_rows = 16 * tiles_past_grid(256 * 4) + 5, many_wide = 16 * tiles_past_grid(14336 * 4) + 9;
  for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n)
    for (DType t : {DType::f32, DType::bf16}) {
      check({Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, n, 256, 70}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 256, many_rows, 0.f, true, true}, t,
            gemv_op, f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 384, many_rows}, t, gemv_op, f32);
      if (n == 1)
        check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 14336, many_wide}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 4096, 130, 0.f, true, true}, t, gemv_op,
            f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 512, 33, 3.f}, t, gemv_op, f32);
      if (n <= 2) check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 14336, 40}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, n, 96, 48, 0.f, true, false}, t, gemv_op,
            f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::static_per_tensor, n, 160, 17, 0.f, false, true}, t, gemv_op,
            f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 400, 140, 0.f, false, true}, t, gemv_op,
            f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 1024, 256, 0.f, true, false, true}, t,
            gemv_op, f32);
    }
  // Refused: K not a multiple of 16, more rows than it serves, x too large to stage.
  Weights W;
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 200, 8}, W);
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {1, 8}), empty(DType::bf16, {1, 200}), W.gpu));
  Weights W2;
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 256, 8}, W2);
  EXPECT_TRUE(cuda::fp8_gemv_applies(empty(DType::bf16, {4, 8}), empty(DType::bf16, {4, 256}), W2.gpu));
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {5, 8}), empty(DType::bf16, {5, 256}), W2.gpu));
  Weights W3;  // Llama-3.1-8B's down_proj width: batches 1 and 2 staged, 3 not
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 14336, 8}, W3);
  EXPECT_TRUE(cuda::fp8_gemv_applies(empty(DType::bf16, {2, 8}), empty(DType::bf16, {2, 14336}), W3.gpu));
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {3, 8}), empty(DType::bf16, {3, 14336}), W3.gpu));
}

// The GEMV's fusions (Backend::rms_norm_linear_fp8 / rms_norm_gate_up_act_fp8 at decode batches)
// equal the decomposition on the GPU bit for bit: the prologue's norm is rms_norm.cu's
// arithmetic in its order, the epilogue's activation gated_act.cu's on the rounded gate and up.
TEST_P(CudaFp8Gemv, GemvFusionsEqualDecomposition) {
  const std::vector<Case> cases = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 1024, 320},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 1, 512, 256},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 1, 256, 96},
      // More GLU items (8 a tile) and rows (16 a tile) than the persistent grid holds.
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 256, 2 * (8 * tiles_past_grid(256 * 4) + 3)},
  };
  for (DType t : {DType::bf16, DType::f32})
    for (Case c : cases)
      for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n) {
        c.n = n;
        SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " n " + std::to_string(n));
        Weights W;
        make_weights(c, W);
        const Tensor x = upload(make_x(c, t), t, {c.n, c.in});
        const Tensor g = upload(round_to(random_normal(size_t(c.in), rng), t), t, {c.in});
        const Tensor normed = empty(t, {c.n, c.in});
        const int64_t inter = c.out / 2;
        // Decomposed: the norm kernel, then the GEMV (and the gated activation).
        const Tensor want = empty(t, {c.n, c.out}), want_act = empty(t, {c.n, inter});
        gpu->rms_norm(normed, x, g, 1e-5f);
        gpu->linear_fp8(want, normed, W.gpu, Tensor(), false);
        gpu->gated_act(want_act, want, Activation::silu);
        const Tensor got = empty(t, {c.n, c.out}), got_act = empty(t, {c.n, inter}), gate_up = empty(t, {c.n, c.out});
        cuda::Fp8GemvFusion norm;  // the fused path is the one taken
        norm.norm_weight = g;
        norm.eps = 1e-5f;
        cuda::Fp8GemvFusion glu = norm;
        glu.glu = true;
        ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got, x, W.gpu, norm));
        ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got_act, x, W.gpu, glu));
        gpu->rms_norm_linear_fp8(got, normed, x, g, 1e-5f, W.gpu, Tensor());
        gpu->rms_norm_gate_up_act_fp8(got_act, gate_up, normed, x, g, 1e-5f, W.gpu, Activation::silu);
        EXPECT_EQ(download(got), download(want));
        EXPECT_EQ(download(got_act), download(want_act));
        // The GELU-tanh form (Gemma) against its decomposition too.
        gpu->gated_act(want_act, want, Activation::gelu_tanh);
        gpu->rms_norm_gate_up_act_fp8(got_act, gate_up, normed, x, g, 1e-5f, W.gpu, Activation::gelu_tanh);
        EXPECT_EQ(download(got_act), download(want_act));
      }
}

// The GEMV's RoPE + KV-store epilogue (Backend::rms_norm_qkv_rope_store_fp8 at decode batches)
// equals the decomposition on the GPU (the norm-fused GEMV, then rope_store_kv: rope.cu) bit for
// bit: qkv and both caches, at rows 1..4, caches in x's dtype and E4M3 (scales not 1), full and
// partial rotary dims (pass-through pairs), a LongRoPE table used from a position on, bias,
// per-channel and 128-block weights, and a row whose slot is outside the pool (not stored).
TEST_P(CudaFp8Gemv, GemvRopeStoreEqualsDecomposition) {
  struct Rope {
    Case c;
    int n_heads, n_kv, d, rot_half;
    bool long_table;
  };
  // (heads + 2 * 2) * 64 / 2 rotary / pass-through pairs, 8 a tile: more tiles than the grid.
  const int n_heads_many = 2 * int(tiles_past_grid(256 * 4) / 8 + 1);
  const std::vector<Rope> shapes = {
      {{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 256, (4 + 2 * 2) * 64, 0.f, true},
       4,
       2,
       64,
       32,
       false},
      {{Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 0, 512, (2 + 2 * 1) * 128}, 2, 1, 128, 32, true},
      {{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 256, (n_heads_many + 2 * 2) * 64, 0.f, true},
       n_heads_many,
       2,
       64,
       24,
       true},
  };
  const int64_t n_slots = 16;
  for (DType t : {DType::bf16, DType::f16})
    for (const Rope& rs : shapes)
      for (bool fp8_cache : {false, true})
        for (int64_t m = 1; m <= cuda::kFp8GemvMaxRows; ++m) {
          Case c = rs.c;
          c.n = m;
          SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " d " + std::to_string(rs.d) +
                       " rot_half " + std::to_string(rs.rot_half) + (fp8_cache ? " fp8 cache" : " cache in x's dtype") +
                       " rows " + std::to_string(m));
          Weights W;
          make_weights(c, W);
          const Tensor x = upload(make_x(c, t), t, {m, c.in});
          const Tensor g = upload(round_to(random_normal(size_t(c.in), rng), t), t, {c.in});
          const Tensor bias = c.bias ? upload(round_to(random_normal(size_t(c.out), rng), t), t, {c.out}) : Tensor();
          HiLoTable freq = hi_lo_table(rs.rot_half, 10000.0), freq_long = hi_lo_table(rs.rot_half, 10000.0, 4.0);
          std::vector<int32_t> positions, slots;
          for (int64_t r = 0; r < m; ++r) {
            positions.push_back(int32_t(7 + 33331 * r));        // rows from 1 on past long_from (500), up to ~100,000
            slots.push_back(r == 2 ? -1 : int32_t(3 + 4 * r));  // row 2: outside the pool
          }
          RopeStoreArgs ra;
          ra.n_heads = rs.n_heads;
          ra.positions = upload_index(positions, {m});
          ra.slots = upload_index(slots, {m});
          ra.inv_freq = upload(freq.hi, DType::f32, {rs.rot_half});
          ra.inv_freq_lo = upload(freq.lo, DType::f32, {rs.rot_half});
          if (rs.long_table) {
            ra.inv_freq_long = upload(freq_long.hi, DType::f32, {rs.rot_half});
            ra.inv_freq_long_lo = upload(freq_long.lo, DType::f32, {rs.rot_half});
            ra.long_from = 500;
          }
          ra.kv_scales = fp8_cache ? KvScales{0.7f, 1.9f} : KvScales{};
          const DType cache_t = fp8_cache ? DType::fp8_e4m3 : t;
          const size_t cache_bytes = size_t(n_slots * rs.n_kv * rs.d) * dtype_size(cache_t);
          auto cache = [&] {  // zeroed, so unwritten slots compare equal too
            void* p = gpu->alloc(cache_bytes);
            owned_.push_back(p);
            std::vector<uint8_t> zero(cache_bytes, 0);
            gpu->copy_h2d(p, zero.data(), cache_bytes);
            return Tensor(p, cache_t, Device::cuda, {n_slots, rs.n_kv, rs.d});
          };
          auto bytes = [&](const Tensor& u) {
            std::vector<uint8_t> b(u.nbytes());
            gpu->copy_d2h(b.data(), u.data, b.size());
            gpu->synchronize();
            return b;
          };
          // Decomposed: the norm-fused GEMV, then rope_store_kv.
          RopeStoreArgs want_r = ra;
          want_r.k_cache = cache();
          want_r.v_cache = cache();
          const Tensor want = empty(t, {m, c.out}), normed = empty(t, {m, c.in});
          gpu->rms_norm_linear_fp8(want, normed, x, g, 1e-5f, W.gpu, bias);
          const int64_t q_size = int64_t(rs.n_heads) * rs.d, kv_size = int64_t(rs.n_kv) * rs.d;
          gpu->rope_store_kv(want.slice_cols(0, q_size).unflatten_last(rs.n_heads, rs.d),
                             want.slice_cols(q_size, kv_size).unflatten_last(rs.n_kv, rs.d),
                             want.slice_cols(q_size + kv_size, kv_size).unflatten_last(rs.n_kv, rs.d), ra.positions,
                             want_r.tables(), want_r.k_cache, want_r.v_cache, ra.slots, ra.kv_scales);
          // Fused: the path taken must be the GEMV's.
          RopeStoreArgs got_r = ra;
          got_r.k_cache = cache();
          got_r.v_cache = cache();
          const Tensor got = empty(t, {m, c.out});
          cuda::Fp8GemvFusion f;
          f.norm_weight = g;
          f.eps = 1e-5f;
          f.rope_store = true;
          f.rope = got_r;
          ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got, x, W.gpu, f));
          gpu->rms_norm_qkv_rope_store_fp8(got, normed, x, g, 1e-5f, W.gpu, bias, got_r);
          gpu->synchronize();
          // On a mismatch: how many elements differ and the first few, each as (row, column),
          // its head and dim (q, k or v; rotary pair i or pass-through) and got vs want values.
          const auto where = [&](const Tensor& gt, const Tensor& wt, const char* what) {
            const std::vector<uint8_t> gb = bytes(gt), wb = bytes(wt);
            if (gb == wb) return std::string();
            const size_t es = dtype_size(gt.dtype), n = gb.size() / es;
            const int64_t cols = gt.size(gt.ndim - 1) * (gt.ndim == 3 ? gt.size(1) : 1);
            std::vector<float> gf(n), wf(n);
            convert_to_f32(gb.data(), gt.dtype, gf.data(), n);
            convert_to_f32(wb.data(), wt.dtype, wf.data(), n);
            std::string s = std::string(what) + ": ";
            size_t n_diff = 0;
            for (size_t e = 0; e < n; ++e) {
              if (std::memcmp(gb.data() + e * es, wb.data() + e * es, es) == 0) continue;
              if (++n_diff > 6) continue;
              const int64_t row = int64_t(e) / cols, col = int64_t(e) % cols;
              const int64_t head = col / rs.d, dim = col % rs.d;
              const char* region = gt.ndim == 3                  ? "kv"
                                   : head < rs.n_heads           ? "q"
                                   : head < rs.n_heads + rs.n_kv ? "k"
                                                                 : "v";
              const bool rotated = gt.ndim == 3 ? what[0] == 'k' : head < rs.n_heads + rs.n_kv;
              const int64_t pair = rotated && dim < 2 * rs.rot_half ? dim % rs.rot_half : -1;
              uint32_t gbits = 0, wbits = 0;  // the raw element (little-endian)
              std::memcpy(&gbits, gb.data() + e * es, std::min<size_t>(es, 4));
              std::memcpy(&wbits, wb.data() + e * es, std::min<size_t>(es, 4));
              char buf[320];
              std::snprintf(buf, sizeof(buf),
                            "[%s %lld col %lld: %s head %lld dim %lld (%s %lld): got %.9g (0x%x) want %.9g (0x%x)] ",
                            gt.ndim == 3 ? "slot" : "row", (long long)row, (long long)col, region, (long long)head,
                            (long long)dim, pair >= 0 ? "rotary pair" : "not rotated, dim",
                            (long long)(pair >= 0 ? pair : dim), double(gf[e]), gbits, double(wf[e]), wbits);
              s += buf;
            }
            return s + std::to_string(n_diff) + " of " + std::to_string(n) + " elements differ";
          };
          EXPECT_EQ(where(got, want, "qkv"), "");
          EXPECT_EQ(where(got_r.k_cache, want_r.k_cache, "k cache"), "");
          EXPECT_EQ(where(got_r.v_cache, want_r.v_cache, "v cache"), "");
          // Something was stored (row 0's slot), so equal caches are not two untouched ones.
          const std::vector<uint8_t> kb = bytes(got_r.k_cache);
          EXPECT_TRUE(std::any_of(kb.begin(), kb.end(), [](uint8_t b) { return b != 0; }));
        }
}

// A captured GEMV replays to the same result as its eager run (no allocation, no host work
// inside the capture), also with more row tiles than the persistent grid.
TEST_P(CudaFp8Gemv, GemvReplaysFromGraph) {
  const Case cases[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 1024, 300},
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 2, 256, 16 * tiles_past_grid(256 * 4 * 2) + 7},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("rows " + std::to_string(c.n) + " out " + std::to_string(c.out));
    Weights W;
    make_weights(c, W);
    const Tensor xd = upload(make_x(c, DType::bf16), DType::bf16, {c.n, c.in});
    const Tensor eager = empty(DType::bf16, {c.n, c.out}), replayed = empty(DType::bf16, {c.n, c.out});
    gpu->linear_fp8(eager, xd, W.gpu, Tensor(), false);
    gpu->begin_capture();
    gpu->linear_fp8(replayed, xd, W.gpu, Tensor(), false);
    std::unique_ptr<Graph> g = gpu->end_capture();
    gpu->replay(*g);
    gpu->synchronize();
    EXPECT_EQ(download(replayed), download(eager));
    // Again: a replay leaves nothing behind that changes the next one.
    poison(replayed);
    gpu->replay(*g);
    gpu->synchronize();
    EXPECT_EQ(download(replayed), download(eager));
  }
}

// Exactly representable sums: small integer activations (static input scale 1, so the codes are
// the integers) and weights in {-2, ..., 2} (scale 1 / 4 and 1): every 128-k partial sum and every
// total is a small integer, exact in any accumulator, so both loops equal the CPU bit for bit
// (f32 out), whatever their order: rows 1..4, K a multiple of 128, K = 400 (a partial group and
// vectors past the last whole 64) and K = 48 (below one step).
TEST_P(CudaFp8Gemv, GemvExactOnIntegers) {
  const uint8_t int_codes[] = {0xc0, 0xb8, 0x00, 0x38, 0x40};  // E4M3 -2, -1, 0, 1, 2
  for (int64_t in : {int64_t(1024), int64_t(400), int64_t(48)})
    for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n)
      for (Fp8WeightScheme ws : {Fp8WeightScheme::per_tensor, Fp8WeightScheme::per_channel}) {
        const int64_t out = 77;
        SCOPED_TRACE("K " + std::to_string(in) + " rows " + std::to_string(n) + " " + fp8_weight_scheme_name(ws));
        Weights W;
        make_weights({ws, Fp8ActScheme::static_per_tensor, n, in, out}, W);
        std::uniform_int_distribution<int> pick(0, 4), xi(-3, 3);
        for (auto& b : W.codes) b = int_codes[pick(rng)];
        for (size_t i = 0; i < W.scales.size(); ++i) W.scales[i] = i % 2 ? 0.25f : 1.f;
        W.input_scale = 1.f;
        gpu->copy_h2d(W.gpu.w.data, W.codes.data(), W.codes.size());
        gpu->copy_h2d(W.gpu.w_scale.data, W.scales.data(), W.scales.size() * 4);
        gpu->copy_h2d(W.gpu.input_scale.data, &W.input_scale, 4);
        gpu->synchronize();
        std::vector<float> x(size_t(n * in));
        for (auto& v : x) v = float(xi(rng));
        std::vector<float> ref(size_t(n * out), 0.f), xc = x;
        cpu.linear_fp8(host_view(ref, {n, out}), host_view(xc, {n, in}), W.cpu, Tensor(), false);
        const Tensor od = empty(DType::f32, {n, out});
        gemv(od, upload(x, DType::f32, {n, in}), W.gpu, Tensor(), false);
        EXPECT_EQ(download(od), ref);
      }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaFp8Gemv, ::testing::Values("fma", "mma"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace seam::test
