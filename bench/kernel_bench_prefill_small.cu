// seam_kernel_bench's section for the small kernels of Qwen3-30B-A3B's prefill layer that sit
// furthest above their floors (docs/performance.md, twenty-fifth pass: qk_norm_rope_store ~80 us a
// layer against ~22 of bytes, moe_combine ~97 against ~42, moe_align ~19.6 for 0.4 MB): each
// alone, in each of its forms, at the model's shapes (and the RMSNorms), so a change to one is measured before it is
// measured in the model; the q/k-norm forms and the combine also after their real predecessors
// (the difference rows). Part of --moe.
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/qk_norm_rope_store.h"
#include "backend/cuda/rms_norm.h"
#include "kernel_bench.h"

namespace seam::kbench {

// q/k RMSNorm + RoPE + KV store at Qwen3-30B-A3B's heads (32 q, 4 kv, head dim 128, full rotary)
// for n tokens, each kernel. Bytes: q and k read and written, v read, k and v stored.
void bench_qk_norm_rope_store(Bench& b, int n) {
  constexpr int64_t heads = 32, kv = 4, d = 128, width = (heads + 2 * kv) * d;
  const int64_t n_slots = n;
  Tensor qkv = b.random(DType::bf16, {n, width}, 5.f);
  Tensor qn = b.random(DType::bf16, {d}), kn = b.random(DType::bf16, {d});
  std::vector<int32_t> pos_h(static_cast<size_t>(n)), slots_h(static_cast<size_t>(n));
  std::iota(pos_h.begin(), pos_h.end(), 0);  // a prefill's positions and slots
  std::iota(slots_h.begin(), slots_h.end(), 0);
  Tensor pos = b.upload_i32(pos_h, {n}), slots = b.upload_i32(slots_h, {n});
  std::vector<double> f(static_cast<size_t>(d / 2));
  for (int64_t j = 0; j < d / 2; ++j) f[size_t(j)] = std::pow(1000000.0, -double(j) / double(d / 2));  // Qwen3's base
  std::vector<float> hi, lo;
  split_inv_freq(f, hi, lo);
  Tensor hi_d = b.upload(hi, DType::f32, {d / 2}), lo_d = b.upload(lo, DType::f32, {d / 2});
  const RopeTables tables(hi_d, Tensor(), 0, lo_d, Tensor());
  Tensor kc = b.alloc(DType::bf16, {n_slots, kv, d}), vc = b.alloc(DType::bf16, {n_slots, kv, d});
  auto heads_of = [&](int64_t from, int64_t count) {
    return qkv.slice_cols(from * d, count * d).unflatten_last(count, d);
  };
  const double bytes = double(n) * d * 2 * (2.0 * (heads + kv) + kv + 2.0 * kv);
  const std::string shape = std::to_string(n) + " tok 32/4 heads d128 bf16";
  const auto form_name = [](cuda::QkNormRopeKernel k) {
    return k == cuda::QkNormRopeKernel::per_head        ? "per-head"
           : k == cuda::QkNormRopeKernel::shared_angles ? "shared"
           : k == cuda::QkNormRopeKernel::staged        ? "staged"
                                                        : "vector";
  };
  const cuda::QkNormRopeKernel forms[] = {cuda::QkNormRopeKernel::per_head, cuda::QkNormRopeKernel::shared_angles,
                                          cuda::QkNormRopeKernel::staged, cuda::QkNormRopeKernel::vector};
  for (cuda::QkNormRopeKernel k : forms) {
    // In place on qkv every call, as in the model (the values stay finite: each call renormalises).
    const double us = b.time_us([&](int) {
      cuda::launch_qk_norm_rope_store(heads_of(0, heads), heads_of(heads, kv), heads_of(heads + kv, kv), qn, kn, 1e-6f,
                                      pos, tables, kc, vc, slots, b.stream(), k);
    });
    b.row(std::string("qk_norm_rope_store ") + form_name(k), shape, us, bytes, 0);
  }
  // Each form after its real predecessor, the qkv GEMM (hidden 2,048 -> 5,120, cuBLAS): its own
  // cost is (GEMM + form) - GEMM, both timed the same way (a PDL-launched kernel's trace time
  // includes its wait on the GEMM's tail).
  if (n >= 64) {
    Tensor x = b.random(DType::bf16, {n, 2048}), wq = b.random(DType::bf16, {width, 2048}, 0.02f);
    const double gemm_us = b.time_us([&](int) { b.gpu().linear(qkv, x, wq, Tensor{}); });
    b.row("qkv GEMM (the predecessor)", std::to_string(n) + " x 2048 -> 5120 bf16", gemm_us, 0,
          2.0 * double(n) * 2048 * double(width));
    for (cuda::QkNormRopeKernel k : forms) {
      const double both_us = b.time_us([&](int) {
        b.gpu().linear(qkv, x, wq, Tensor{});
        cuda::launch_qk_norm_rope_store(heads_of(0, heads), heads_of(heads, kv), heads_of(heads + kv, kv), qn, kn, 1e-6f,
                                        pos, tables, kc, vc, slots, b.stream(), k);
      });
      b.row(std::string("  ") + form_name(k) + " after the GEMM (difference)", shape, both_us - gemm_us, bytes, 0);
    }
  }
  b.release_all();
}

// The weighted sum of each token's k = 8 expert rows into the residual, hidden 2048, bf16 rows
// (the grouped path's expert_out), both forms. Bytes: the n k rows read, out read and written.
void bench_moe_combine(Bench& b, int n) {
  constexpr int64_t k = 8, H = 2048;
  Tensor y = b.random(DType::bf16, {n * k, H}), out = b.random(DType::bf16, {n, H});
  Tensor w = b.upload(std::vector<float>(size_t(n * k), 1.f / float(k)), DType::f32, {n, k});
  for (cuda::MoeCombineForm form : {cuda::MoeCombineForm::scalar, cuda::MoeCombineForm::vector}) {
    const double us = b.time_us([&](int) { cuda::launch_moe_combine(out, y, w, b.stream(), form); }, 8, 11);
    b.row(form == cuda::MoeCombineForm::scalar ? "moe_combine scalar" : "moe_combine vector",
          std::to_string(n) + " tok top-8 H2048 bf16", us, double(n) * k * H * 2 + 2.0 * n * H * 2, 0);
  }
  b.release_all();
}

// The grouped path's grouping of n tokens' top-8 of 128 experts (uniform random routing) into
// 128-row M-tiles, both forms. Bytes: the ids read twice, the index written.
void bench_moe_align(Bench& b, int n) {
  constexpr int E = 128, k = 8;
  Tensor ids = b.upload_i32(random_topk_ids(n, E, k, 11), {n, k});
  Tensor index = b.alloc(DType::i32, {2 * E + 2 + int64_t(n) * k});
  for (bool staged : {false, true}) {
    const double us = b.time_us([&](int) { cuda::launch_moe_align_index(index, ids, E, 128, staged, b.stream()); });
    b.row(staged ? "moe_align staged" : "moe_align global", std::to_string(n) + " tok top-8 of 128", us,
          double(n) * k * 4 * 3, 0);
  }
  b.release_all();
}

// The layer's two RMSNorms at hidden 2,048 (Qwen3-30B-A3B), n rows, both kernels. Bytes: the rows
// read and written (the weight stays in L1 / L2). Out of place on rotated inputs, as in the model.
void bench_rms_norm_rows(Bench& b, int n) {
  constexpr int64_t H = 2048;
  constexpr int copies = 4;  // 4 x 16.8 MB at 4,096 rows: past the L2 between reuses
  std::vector<Tensor> xs;
  for (int i = 0; i < copies; ++i) xs.push_back(b.random(DType::bf16, {n, H}));
  Tensor w = b.random(DType::bf16, {H}), out = b.alloc(DType::bf16, {n, H});
  for (cuda::RmsNormKernel k : {cuda::RmsNormKernel::by_size, cuda::RmsNormKernel::rows_in_registers}) {
    const double us = b.time_us([&](int i) { cuda::launch_rms_norm(out, xs[size_t(i % copies)], w, 1e-6f, b.stream(), k); });
    b.row(k == cuda::RmsNormKernel::by_size ? "rms_norm by-size" : "rms_norm rows-in-registers",
          std::to_string(n) + " x 2048 bf16", us, 2.0 * double(n) * H * 2, 0);
  }
  b.release_all();
}

}  // namespace seam::kbench
