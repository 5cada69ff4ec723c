// seam_kernel_bench: times the CUDA backend's ops at Llama-3.1-8B shapes and prints,
// per op and shape, the median time and the achieved rate against the device's
// ceilings (/work/shared/DEVICE.md: copy ~4.0 TB/s, bf16 GEMM ~790-890 TFLOP/s).
//
// Method: each measured op is captured R times into a CUDA graph (so host launch
// cost stays out) and the graph is replayed after warm-up; the median over replays,
// divided by R, is the op's time. Ops whose inputs could sit in the 60 MB L2 rotate
// among several input copies so each call reads from device memory. Inputs are
// random (never zeros). Usage: seam_kernel_bench [--quick | --gemv | --small-m | --moe | --fp8 |
// --focus]; SEAM_KBENCH_ONCE=1 launches each op once, eagerly, untimed (for a profiler).
#include "kernel_bench.h"

#include <cstdlib>

namespace seam::kbench {
namespace {

// Which GEMM rows a run prints: all; quick (no 64-row 8B rows); batch1 (the GEMV and cuBLASLt
// beside it); small_m (every projection at 2-32 rows: the skinny GEMM beside cuBLASLt).
enum class GemmRows { all, quick, batch1, small_m };

void bench_gemms(Bench& b, GemmRows rows) {
  struct G {
    const char* name;
    int64_t n_out, n_in;
    bool f32_out;
    int64_t heads = 0, kv_heads = 0, head_dim = 0;  // qkv only: the fused norm + RoPE + K/V store row
  };
  // Llama-3.1-8B, then the decode projections of Llama-3.2-1B and Qwen2.5-0.5B.
  const G gemms[] = {{"qkv_proj", kQkv, kHidden, false, kHeads, kKvHeads, kHeadDim},
                     {"o_proj", kHidden, kHeads * kHeadDim, false},
                     {"gate_up_proj", 2 * kInter, kHidden, false},
                     {"down_proj", kHidden, kInter, false},
                     {"lm_head (f32 out)", kVocab, kHidden, true}};
  const G small[] = {{"1B qkv_proj", 3072, 2048, false, 32, 8, 64},  {"1B o_proj", 2048, 2048, false},
                     {"1B gate_up_proj", 16384, 2048, false},        {"1B down_proj", 2048, 8192, false},
                     {"0.5B qkv_proj", 1152, 896, false, 14, 2, 64}, {"0.5B o_proj", 896, 896, false},
                     {"0.5B gate_up_proj", 9728, 896, false},        {"0.5B down_proj", 896, 4864, false}};
  cuda::CublasLtGemm cublas;
  // One linear's operands and what a row reports: random weights in enough copies that one pass
  // over them is 3x the L2 (matters for small M), x, out, the bytes moved and the FLOPs.
  struct Problem {
    std::vector<Tensor> ws;  // each [n_out, n_in]
    int copies = 0;
    Tensor x, out;  // [m, n_in], [m, n_out]
    double bytes = 0, flops = 0;
    std::string shape;
    const Tensor& w(int i) const { return ws[size_t(i % copies)]; }  // the i-th call's weight copy
  };
  auto make_problem = [&](const G& g, int64_t m) {
    Problem p;
    const double w_bytes = double(g.n_out * g.n_in) * 2;
    p.copies = m >= 1024 ? 1 : std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
    for (int c = 0; c < p.copies; ++c) p.ws.push_back(b.random(DType::bf16, {g.n_out, g.n_in}, 0.02f));
    p.x = b.random(DType::bf16, {m, g.n_in});
    p.out = b.alloc(g.f32_out ? DType::f32 : DType::bf16, {m, g.n_out});
    p.bytes = w_bytes + double(m * g.n_in) * 2 + double(m * g.n_out) * (g.f32_out ? 4 : 2);
    p.shape = "M=" + std::to_string(m) + " N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
    p.flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
    return p;
  };
  auto one = [&](const G& g, int64_t m, bool with_cublas) {
    const Problem p = make_problem(g, m);
    const Tensor &x = p.x, &out = p.out;
    const std::string& shape = p.shape;
    const double bytes = p.bytes, flops = p.flops;
    const bool gemv = cuda::gemv_applies(out, x, p.ws[0], Tensor{});
    const double us = b.time_us([&](int i) { b.gpu().linear(out, x, p.w(i), Tensor{}); });
    b.row(std::string("linear ") + g.name + (gemv ? " (gemv)" : ""), shape, us, bytes, flops);
    if (gemv) {  // the fused forms a decode step runs: RMSNorm in front, or the residual add behind
      Tensor norm_w = b.random(DType::bf16, {g.n_in}, 1.f), normed = b.alloc(DType::bf16, {m, g.n_in});
      const double us_norm =
          b.time_us([&](int i) { b.gpu().rms_norm_linear(out, normed, x, norm_w, 1e-5f, p.w(i), Tensor{}); });
      b.row(std::string("rms_norm + linear ") + g.name + " (gemv)", shape, us_norm, bytes, flops);
      if (std::string(g.name).find("gate_up") != std::string::npos) {  // + SiLU * up: writes [m, n_out / 2]
        Tensor act = b.alloc(DType::bf16, {m, g.n_out / 2}), gate_up = b.alloc(DType::bf16, {m, g.n_out});
        const double us_glu =
            b.time_us([&](int i) { b.gpu().rms_norm_gate_up_silu(act, gate_up, normed, x, norm_w, 1e-5f, p.w(i)); });
        b.row(std::string("rms_norm + linear + silu_mul ") + g.name + " (gemv)", shape, us_glu, bytes, flops);
      }
      if (g.heads > 0 && m == 1) {  // the decode step's qkv: norm, RoPE and the K/V store in one GEMV
        const int64_t d = g.head_dim, n_slots = 64;
        RopeStoreArgs r;
        r.n_heads = int(g.heads);
        r.positions = b.upload_i32({1000}, {1});
        r.inv_freq = b.upload(rope_inv_freq(d), DType::f32, {d / 2});
        r.k_cache = b.alloc(DType::bf16, {n_slots, g.kv_heads, d});
        r.v_cache = b.alloc(DType::bf16, {n_slots, g.kv_heads, d});
        r.slots = b.upload_i32({7}, {1});
        const double us_rope = b.time_us(
            [&](int i) { b.gpu().rms_norm_qkv_rope_store(out, normed, x, norm_w, 1e-5f, p.w(i), Tensor{}, r); });
        b.row(std::string("rms_norm + linear + rope + kv store ") + g.name + " (gemv)", shape, us_rope, bytes, flops);
      }
      if (!g.f32_out) {
        const double us_acc = b.time_us([&](int i) { b.gpu().linear_accumulate(out, x, p.w(i), Tensor{}); });
        b.row(std::string("linear + residual add ") + g.name + " (gemv)", shape, us_acc,
              bytes + double(m * g.n_out) * 2, flops);
      }
    }
    if (with_cublas && gemv) {  // the same problem through cuBLASLt, for comparison
      const double us_cublas = b.time_us([&](int i) { cublas.run(out, x, p.w(i), Tensor{}, b.stream()); });
      b.row(std::string("linear ") + g.name + " (cuBLASLt)", shape, us_cublas, bytes, flops);
    }
    b.release_all();
  };
  if (rows == GemmRows::small_m) {
    // Decode batches and short extends (2-16 rows; 32 for reference): the skinny tensor-core
    // GEMM and cuBLASLt on the same problem, every projection of the three shapes.
    auto pair = [&](const G& g, int64_t m) {
      const Problem p = make_problem(g, m);
      if (cuda::skinny_gemm_applies(p.out, p.x, p.ws[0], Tensor{})) {
        const double us =
            b.time_us([&](int i) { cuda::launch_skinny_gemm(p.out, p.x, p.w(i), Tensor{}, false, b.stream()); });
        b.row(std::string("linear ") + g.name + " (skinny)", p.shape, us, p.bytes, p.flops);
      }
      const double us_cublas = b.time_us([&](int i) { cublas.run(p.out, p.x, p.w(i), Tensor{}, b.stream()); });
      b.row(std::string("linear ") + g.name + " (cuBLASLt)", p.shape, us_cublas, p.bytes, p.flops);
      b.release_all();
    };
    for (int64_t m : {2, 4, 8, 12, 16, 32}) {
      for (const G& g : small) pair(g, m);
      for (const G& g : gemms) pair(g, m);
    }
    return;
  }
  for (int64_t m : {int64_t(1), int64_t(64), int64_t(4096)}) {
    if ((rows == GemmRows::quick && m == 64) || (rows == GemmRows::batch1 && m > 1)) continue;
    for (const G& g : gemms) one(g, m, m == 1);
  }
  for (const G& g : small) one(g, 1, true);
}

// An attention shape: heads, kv heads, head dim, and a window (0: none).
struct AttnShape {
  int64_t heads = kHeads, kv_heads = kKvHeads, d = kHeadDim;
  int window = 0;
  bool kv_fp8 = false;  // an FP8 E4M3 KV cache (--kv-cache-dtype fp8_e4m3): 1 byte a K/V element
  std::string label() const {
    return std::to_string(heads) + "/" + std::to_string(kv_heads) + "x" + std::to_string(d) +
           (window > 0 ? " w" + std::to_string(window) : "") + (kv_fp8 ? " fp8 KV" : "");
  }
};

// Decode attention: `batch` sequences of `ctx` tokens each (this step's token included). With a
// window, only its keys are read: the bytes column counts those.
void bench_decode_attention(Bench& b, int batch, int ctx, bool shuffled, const AttnShape& sh = {}) {
  const int64_t n_slots = int64_t(batch) * ctx, n_kv = sh.kv_heads, hd = sh.d, n_heads = sh.heads;
  Tensor kc = b.random(DType::bf16, {n_slots, n_kv, hd});
  Tensor vc = b.random(DType::bf16, {n_slots, n_kv, hd});
  if (sh.kv_fp8) {  // the codes of the random keys and values, slot i from row i
    std::vector<int32_t> all(static_cast<size_t>(n_slots));
    std::iota(all.begin(), all.end(), 0);
    Tensor k8 = b.alloc(DType::fp8_e4m3, {n_slots, n_kv, hd}), v8 = b.alloc(DType::fp8_e4m3, {n_slots, n_kv, hd});
    b.gpu().store_kv(k8, v8, kc, vc, b.upload_i32(all, {n_slots}));
    kc = k8;
    vc = v8;
  }
  Tensor q = b.random(DType::bf16, {batch, n_heads, hd});
  Tensor out = b.alloc(DType::bf16, {batch, n_heads, hd});
  std::vector<int32_t> pt(static_cast<size_t>(n_slots));
  std::iota(pt.begin(), pt.end(), 0);
  if (shuffled) {  // pages scattered over the pool, as after many allocations and frees
    std::mt19937 rng(7);
    std::shuffle(pt.begin(), pt.end(), rng);
  }
  std::vector<int32_t> indptr(size_t(batch) + 1), lens(size_t(batch), ctx), rows(static_cast<size_t>(batch));
  std::iota(indptr.begin(), indptr.end(), 0);
  std::iota(rows.begin(), rows.end(), 0);
  AttentionBatch ab;
  ab.n_tokens = batch;
  ab.n_seqs = batch;
  ab.max_seq_len = 0;  // as in a decode graph
  ab.qo_indptr = b.upload_i32(indptr, {batch + 1});
  ab.seq_lens = b.upload_i32(lens, {batch});
  ab.req_rows = b.upload_i32(rows, {batch});
  ab.page_table = b.upload_i32(pt, {batch, ctx});
  AttentionOptions o;
  o.scale = 1.f / std::sqrt(float(hd));
  o.sliding_window = sh.window;
  const double us = b.time_us([&](int) { b.gpu().attention(out, q, kc, vc, ab, o); }, 5, 11);
  const int64_t keys = sh.window > 0 ? std::min<int64_t>(ctx, sh.window) : ctx;  // keys a row reads
  const double kv_bytes = double(batch) * keys * n_kv * hd * 2 * (sh.kv_fp8 ? 1 : 2);
  b.row(std::string("attention decode") + (shuffled ? " (shuffled)" : ""),
        "batch " + std::to_string(batch) + " ctx " + std::to_string(ctx) + " " + sh.label(), us, kv_bytes,
        4.0 * double(batch) * keys * n_heads * hd);
  b.release_all();
}

void bench_prefill_attention(Bench& b, int n_tokens, const AttnShape& sh = {}) {
  const int64_t n_kv = sh.kv_heads, hd = sh.d, n_heads = sh.heads, qkv_width = (n_heads + 2 * n_kv) * hd;
  Tensor qkv = b.random(DType::bf16, {n_tokens, qkv_width});
  Tensor kc = b.random(DType::bf16, {n_tokens, n_kv, hd});
  Tensor vc = b.random(DType::bf16, {n_tokens, n_kv, hd});
  Tensor out = b.alloc(DType::bf16, {n_tokens, n_heads, hd});
  std::vector<int32_t> pt(static_cast<size_t>(n_tokens));
  std::iota(pt.begin(), pt.end(), 0);
  AttentionBatch ab;
  ab.n_tokens = n_tokens;
  ab.n_seqs = 1;
  ab.n_prefill_seqs = 1;
  ab.n_prefill_tokens = n_tokens;
  ab.max_seq_len = n_tokens;
  ab.qo_indptr = b.upload_i32({0, n_tokens}, {2});
  ab.seq_lens = b.upload_i32({n_tokens}, {1});
  ab.req_rows = b.upload_i32({0}, {1});
  ab.page_table = b.upload_i32(pt, {1, n_tokens});
  Tensor q = qkv.slice_cols(0, n_heads * hd).unflatten_last(n_heads, hd);
  AttentionOptions o;
  o.scale = 1.f / std::sqrt(float(hd));
  o.sliding_window = sh.window;
  const double us = b.time_us([&](int) { b.gpu().attention(out, q, kc, vc, ab, o); }, 5, 11);
  // Causal: half of the n x n score matrix (plus the diagonal), QK^T and PV; with a window only
  // the band of w keys a row (the first w rows: a triangle).
  const double n = n_tokens, w = sh.window > 0 ? std::min<double>(sh.window, n) : n;
  const double pairs = w * (w + 1) / 2 + (n - w) * w;
  const double flops = 4.0 * pairs * hd * n_heads;
  b.row("attention prefill causal", std::to_string(n_tokens) + " tok " + sh.label(), us, 0, flops);
  if (sh.heads == kHeads && sh.kv_heads == kKvHeads && sh.d == kHeadDim && sh.window == 0)
    std::printf("|   -> 32 layers             | %-34s | %10.1f |                  |                    |\n",
                "attention share of a prefill", us * 32);
  // Each prefill kernel named (the row above is the backend's pick; SEAM_PREFILL_WGMMA).
  const cuda::AttentionParams p = cuda::make_attention_params(out, q, kc, vc, ab, o);
  for (const auto& [kernel_name, name] : {std::pair{cuda::PrefillKernel::mma_sync, "  prefill kernel mma.sync"},
                                          std::pair{cuda::PrefillKernel::wgmma, "  prefill kernel wgmma"},
                                          std::pair{cuda::PrefillKernel::wgmma_ws, "  prefill kernel wgmma ws"}}) {
    const cuda::PrefillKernel kernel = kernel_name;  // a plain variable: lambdas capture it (C++17)
    if ((kernel == cuda::PrefillKernel::wgmma && !cuda::flash_prefill_wgmma_supported(DType::bf16, int(hd))) ||
        (kernel == cuda::PrefillKernel::wgmma_ws && !cuda::flash_prefill_ws_supported(DType::bf16, int(hd), false))) {
      std::printf("| %-26s | %-34s | %10s |                  |                    |\n", name,
                  "(needs sm_90a and d 128)", "-");
      continue;
    }
    const double kernel_us =
        b.time_us([&](int) { cuda::launch_flash_prefill(p, DType::bf16, b.stream(), kernel); }, 5, 11);
    b.row(name, std::to_string(n_tokens) + " tok " + sh.label(), kernel_us, 0, flops);
  }
  b.release_all();
}

void bench_elementwise(Bench& b) {
  const int64_t n = 4096;
  {
    const int copies = 4;
    std::vector<Tensor> xs;
    for (int c = 0; c < copies; ++c) xs.push_back(b.random(DType::bf16, {n, kHidden}));
    Tensor w = b.random(DType::bf16, {kHidden}), out = b.alloc(DType::bf16, {n, kHidden});
    const double us = b.time_us([&](int i) { b.gpu().rms_norm(out, xs[size_t(i % copies)], w, 1e-5f); });
    b.row("rms_norm", "4096 x 4096 bf16", us, 2.0 * n * kHidden * 2, 0);
    b.release_all();
  }
  {
    Tensor qkv = b.random(DType::bf16, {n, kQkv});
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    Tensor pos_d = b.upload_i32(pos, {n});
    Tensor freq = b.upload(rope_inv_freq(kHeadDim), DType::f32, {kHeadDim / 2});
    Tensor q = qkv.slice_cols(0, kHeads * kHeadDim).unflatten_last(kHeads, kHeadDim);
    Tensor k = qkv.slice_cols(kHeads * kHeadDim, kKvHeads * kHeadDim).unflatten_last(kKvHeads, kHeadDim);
    const double us = b.time_us([&](int) { b.gpu().rope(q, k, pos_d, freq); });
    b.row("rope (q,k in qkv)", "4096 tok 32+8 heads x128", us, 2.0 * n * (kHeads + kKvHeads) * kHeadDim * 2, 0);
    Tensor kc = b.alloc(DType::bf16, {2 * n, kKvHeads, kHeadDim}),
           vc = b.alloc(DType::bf16, {2 * n, kKvHeads, kHeadDim});
    Tensor v = qkv.slice_cols((kHeads + kKvHeads) * kHeadDim, kKvHeads * kHeadDim).unflatten_last(kKvHeads, kHeadDim);
    const double us2 = b.time_us([&](int) { b.gpu().store_kv(kc, vc, k, v, pos_d); });
    b.row("store_kv", "4096 tok 8 kv heads x128", us2, 4.0 * n * kKvHeads * kHeadDim * 2, 0);
    b.release_all();
  }
  {
    Tensor gu = b.random(DType::bf16, {n, 2 * kInter}), out = b.alloc(DType::bf16, {n, kInter});
    const double us = b.time_us([&](int) { b.gpu().silu_mul(out, gu); });
    b.row("silu_mul", "4096 x 14336 bf16", us, 3.0 * n * kInter * 2, 0);
    b.release_all();
  }
}

void bench_sampling(Bench& b, int n, bool greedy) {
  Tensor logits0 = b.random(DType::f32, {n, kVocab}, 8.f);
  Tensor logits = b.alloc(DType::f32, {n, kVocab});
  Tensor out = b.alloc(DType::i32, {n});
  std::vector<float> temp(static_cast<size_t>(n)), top_p(static_cast<size_t>(n)), min_p(size_t(n), 0.f);
  std::vector<int32_t> top_k(static_cast<size_t>(n)), step(static_cast<size_t>(n));
  std::vector<int64_t> seed(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {  // a mix: plain temperature, top-k 50, top-p 0.9, min-p
    temp[size_t(i)] = greedy ? 0.f : 0.8f;
    top_k[size_t(i)] = i % 4 == 1 ? 50 : 0;
    top_p[size_t(i)] = i % 4 == 2 ? 0.9f : 1.f;
    min_p[size_t(i)] = i % 4 == 3 ? 0.05f : 0.f;
    seed[size_t(i)] = 1000 + i;
    step[size_t(i)] = i;
  }
  SamplingBatch s;
  s.n = n;
  s.temperature = b.upload(temp, DType::f32, {n});
  s.top_k = b.upload(top_k, DType::i32, {n});
  s.top_p = b.upload(top_p, DType::f32, {n});
  s.min_p = b.upload(min_p, DType::f32, {n});
  s.seed = b.upload(seed, DType::i64, {n});
  s.step = b.upload(step, DType::i32, {n});
  // sample overwrites its logits with probabilities: restore them before each call and
  // subtract the restore copy's own time.
  const size_t bytes = size_t(n) * kVocab * 4;
  const double copy_us = b.time_us([&](int) { b.gpu().copy_d2d(logits.data, logits0.data, bytes); });
  const double both_us = b.time_us([&](int) {
    b.gpu().copy_d2d(logits.data, logits0.data, bytes);
    b.gpu().sample(out, logits, s);
  });
  b.row(std::string("sample ") + (greedy ? "greedy" : "top-k/p/min-p mix"),
        std::to_string(n) + " x " + std::to_string(kVocab) + " f32", both_us - copy_us, double(bytes), 0);
  b.release_all();
}

int run(int argc, char** argv) {
  // --quick: fewer decode-attention and GEMM shapes; --gemv: only the batch-1 GEMM rows;
  // --small-m: only the projections at 2-32 rows, skinny GEMM and cuBLASLt; --moe: only the
  // MoE rows (batch-1 paths, grouped GEMMs, the skinny decode kernels); --fp8: only the FP8 rows
  // (the batch-1 GEMV on both inner loops, then the GEMM: wgmma against the cuBLASLt route);
  // --prefill [N]: only the prefill-attention rows at d 128 (every kernel named; N: that length only).
  const bool prefill_only = argc > 1 && std::strcmp(argv[1], "--prefill") == 0;
  const bool moe_only = argc > 1 && std::strcmp(argv[1], "--moe") == 0;
  const bool fp8_only = argc > 1 && std::strcmp(argv[1], "--fp8") == 0;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool gemv_only = argc > 1 && std::strcmp(argv[1], "--gemv") == 0;
  const bool small_m = argc > 1 && std::strcmp(argv[1], "--small-m") == 0;
  // --focus: the fused FP8 gated producer alone (kernel_bench_fp8_act.cu), the residual's scale epilogue
  // and next norm as two kernels and as one (kernel_bench_fp8_norm.cu), then decode attention
  // at batch 1 and 32,768 / 4,096 keys on a bf16 and an FP8 cache (the FP8-KV decode target's),
  // and at batch 64 and 192 / 1,152 keys.
  const bool focus = argc > 1 && std::strcmp(argv[1], "--focus") == 0;
  std::string why;
  if (!cuda_device_present(&why)) {
    std::printf("seam_kernel_bench: no GPU (%s)\n", why.c_str());
    return 0;
  }
  // The MoE router rows (bench_moe_router) time moe_router_route / moe_norm_router_route fused:
  // the backend's switch for them defaults to 0 until their GPU test has run (built 2026-12-02,
  // not yet run on a GPU), so it is turned on here unless already set (=0 times the unfused ops).
  setenv("SEAM_MOE_FUSED_ROUTE", "1", 0);
  Bench b;
  std::printf(
      "seam kernel bench on %s (Llama-3.1-8B shapes, bf16; ceilings: copy %.2f TB/s measured now, GEMM %.0f TFLOP/s "
      "measured on the H200)\n\n",
      b.gpu().name().c_str(), b.copy_tbs(), kGemmTFlops);
  std::printf("| %-26s | %-34s | %10s | %-16s | %-18s |\n", "op", "shape", "time (us)", "achieved", "of ceiling");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(36, '-').c_str(),
              std::string(12, '-').c_str(), std::string(18, '-').c_str(), std::string(20, '-').c_str());
  if (fp8_only) {
    bench_fp8_gemm(b);
    return 0;
  }
  if (focus) {
    bench_fp8_scaled_gated_act(b);
    bench_fp8_scale_norm_quantize(b);
    AttnShape fp8_kv;
    fp8_kv.kv_fp8 = true;
    for (int ctx : {32768, 4096})
      for (const AttnShape& sh : {AttnShape{}, fp8_kv}) bench_decode_attention(b, 1, ctx, false, sh);
    // Batch 64 at the decode benchmarks' short context and at serving's 1,024-token prompts: 512
    // (sequence, kv head) blocks where the ring's shared memory allows two an SM (two waves).
    for (int ctx : {192, 1152}) bench_decode_attention(b, 64, ctx, false);
    return 0;
  }
  if (gemv_only || small_m) {
    bench_gemms(b, gemv_only ? GemmRows::batch1 : GemmRows::small_m);
    return 0;
  }
  if (prefill_only) {  // --prefill [N]: one length only (for a profiler), else the list and a window
    if (argc > 2) {
      bench_prefill_attention(b, std::atoi(argv[2]));
      return 0;
    }
    for (int n : {16384, 4096, 2048, 1024, 512}) bench_prefill_attention(b, n);
    bench_prefill_attention(b, 4096, AttnShape{32, 8, 128, 4096 / 4});  // a window: the options' instantiation
    return 0;
  }
  // One decode token on the batch-1 paths: Mixtral-8x7B (top-2 of 8, hidden 4096, inter 14336)
  // and Qwen3-30B-A3B (top-8 of 128, hidden 2048, inter 768).
  bench_moe_batch1(b, "Mixtral-8x7B", 8, 14336, 4096, 2);
  bench_moe_batch1(b, "Qwen3-30B-A3B", 128, 768, 2048, 8);
  // The router of one token: norm, router GEMV and routing as three ops, as two (the route in the
  // GEMV's last block) and as one (the norm in the GEMV too).
  bench_moe_router(b, "Mixtral-8x7B", 8, 4096, 2);
  bench_moe_router(b, "Qwen3-30B-A3B", 128, 2048, 8);
  // 4,096: the prefill target; 512: a small prefill chunk (~32 rows an expert).
  for (int n : {4096, 512}) bench_moe_grouped(b, n);
  // 64: Qwen3-30B-A3B's batch-64 decode on the skinny tensor-core path, old against new.
  bench_moe_skinny(b, 64);
  // The prefill layer's small kernels furthest above their floors (and its RMSNorms), at 4,096 tokens, and at
  // decode's 64 and 1 (latency-bound there).
  for (int n : {4096, 64, 1}) {
    bench_qk_norm_rope_store(b, n);
    bench_moe_combine(b, n);
    bench_moe_align(b, n);
    bench_rms_norm_rows(b, n);
  }
  // Where the register form starts to win (the by_rows rule's threshold, kRmsNormRegisterRows).
  for (int n : {256, 512, 1024, 2048}) bench_rms_norm_rows(b, n);
  // And where the vector q/k-norm form starts to win (slower at 64 and 1 tokens, faster at 4,096).
  for (int n : {128, 256, 512, 1024, 2048}) bench_qk_norm_rope_store(b, n);
  if (moe_only) return 0;
  // Batch 1 at the contexts of the decode benchmarks (latency-bound) and of serving's 1,024-token prompts.
  for (int ctx : {160, 1152}) bench_decode_attention(b, 1, ctx, false);
  for (int batch : {1, 8, 64}) bench_decode_attention(b, batch, 32768, false);
  bench_decode_attention(b, 8, 32768, true);
  AttnShape fp8_kv;
  fp8_kv.kv_fp8 = true;
  for (int batch : {1, 8, 64}) bench_decode_attention(b, batch, 32768, false, fp8_kv);  // half the bytes
  if (!quick) bench_decode_attention(b, 64, 2048, false);
  // 4,096: the prefill target; 1,024 and 512: either side of the length at which the backend
  // switches from the mma.sync to the wgmma kernel (prefill_kernel_choice.h).
  for (int n : {4096, 1024, 512}) bench_prefill_attention(b, n);
  // Issue 24's families: Phi-3.5-mini (32/32 x 96), gemma-2-9b (16/8 x 256, window 4,096 on
  // every other layer), gemma-3-4b (8/4 x 256, window 1,024 on five of six layers), Mistral-7B
  // (32/8 x 128, window 4,096).
  const AttnShape phi{32, 32, 96, 0}, gemma2{16, 8, 256, 0}, gemma2_w{16, 8, 256, 4096}, gemma3{8, 4, 256, 0},
      gemma3_w{8, 4, 256, 1024}, mistral_w{32, 8, 128, 4096};
  for (const AttnShape& sh : {phi, gemma2, gemma2_w, gemma3_w}) {
    for (int batch : {1, 64}) bench_decode_attention(b, batch, 8192, false, sh);
    bench_decode_attention(b, 1, 1152, false, sh);
  }
  bench_decode_attention(b, 8, 32768, false, mistral_w);
  for (const AttnShape& sh : {phi, gemma2, gemma3, gemma3_w, mistral_w}) bench_prefill_attention(b, 4096, sh);
  if (!quick) bench_prefill_attention(b, 16384, gemma3_w), bench_prefill_attention(b, 16384, gemma3);
  bench_gemms(b, quick ? GemmRows::quick : GemmRows::all);
  if (!quick) bench_fp8_gemm(b);
  bench_elementwise(b);
  for (int n : {1, 64}) {
    bench_sampling(b, n, true);
    bench_sampling(b, n, false);
  }
  return 0;
}

}  // namespace
}  // namespace seam::kbench

int main(int argc, char** argv) {
  try {
    return seam::kbench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seam_kernel_bench: %s\n", e.what());
    return 1;
  }
}
