// seam_kernel_bench's skinny FP8 GEMM rows (part of --fp8): fp8_gemm_skinny_wgmma.h at the decode
// batch sizes it takes (8, 16, 32, 64 rows: its n buckets) on the four Llama-3.1-8B projections,
// against the cuBLASLt route it replaces (fp8_cublaslt.h: the unscaled E4M3 GEMM + the float32
// scale epilogue on the H200) and, for 128-block weights, the one-block wgmma GEMM. Per-channel
// E4M3 weights quantized from random bf16, cycled through enough copies to come from memory, not
// L2; per-token activations quantized once outside the timing; bf16 out. The figure to read: TB/s
// of weight bytes (the kernel streams the weight once; x and out are ~1-3 % of the bytes at 64
// rows) against the H200's ~4.3 TB/s, and the floor "@4.3" in microseconds.
//   * "skinny <tile>f <k>/SM <s> splits": the default plan, then each variant at the split rule's
//     count: 128-feature tiles on the one- and two-block rings (SEAM_FP8_SKINNY_BLOCKS_PER_SM),
//     256-feature tiles (SEAM_FP8_SKINNY_TILE);
//   * at 64 rows, every split count in {1, 2, 3, 4, 6, 8} for both tile widths on the 1/SM ring:
//     where the rule's pick sits among them;
//   * "linear_fp8": the whole op (activation quantization + the routed product) at 64 rows.
#include "kernel_bench.h"

namespace seam::kbench {

namespace {

constexpr double kHbmTBs = 4.3;  // the H200's streaming bandwidth the brief's floors use

void skinny_row(const std::string& op, const std::string& shape, double us, double w_bytes) {
  const double tbs = w_bytes / (us * 1e-6) / 1e12;
  std::printf("| %-44s | %-22s | %8.1f us | %5.2f TB/s weight %5.1f%% | floor @%.1f: %6.1f us |\n", op.c_str(),
              shape.c_str(), us, tbs, 100 * tbs / kHbmTBs, kHbmTBs, w_bytes / (kHbmTBs * 1e12) * 1e6);
  std::fflush(stdout);
}

}  // namespace

void bench_fp8_skinny(Bench& b) {
  const auto& shapes = kLlamaProjections;
  std::printf("\n## skinny FP8 GEMM (fp8_gemm_skinny_wgmma.h) vs the cuBLASLt route, Llama-3.1-8B, bf16 out\n");
  // The split-K workspace: tickets zeroed once (every launch leaves them zero), partials.
  constexpr size_t kWorkspace = size_t(64) << 20;
  // Its own allocation (release_all frees the per-shape tensors only), freed at the end.
  void* workspace = nullptr;
  SEAM_CUDA_CHECK(cudaMalloc(&workspace, kWorkspace));
  SEAM_CUDA_CHECK(cudaMemsetAsync(workspace, 0, kWorkspace, b.stream()));
  cuda::Fp8CublasLt lt;
  for (int64_t m : {int64_t(8), int64_t(16), int64_t(32), int64_t(64)})
    for (const auto& g : shapes) {
      const double w_bytes = double(g.n_out * g.n_in);
      const int copies = std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
      const std::vector<Fp8Weight> ws = fp8_weights(b, g.n_out, g.n_in, copies);
      const Tensor x = b.random(DType::bf16, {m, g.n_in});
      const Tensor codes = b.alloc(DType::fp8_e4m3, {m, g.n_in}), scales = b.alloc(DType::f32, {1, m});
      cuda::launch_fp8_quantize_act(codes, scales, x, ws[0], b.stream());
      const Tensor out = b.alloc(DType::bf16, {m, g.n_out});
      const std::string shape =
          "M=" + std::to_string(m) + " N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
      auto w_of = [&](int i) -> const Fp8Weight& { return ws[size_t(i % copies)]; };
      if (!cuda::fp8_gemm_skinny_wgmma_applies(out, codes, ws[0])) {
        std::printf("| %-44s | %-22s | (skinny GEMM not available: needs sm_90a build + CC 9.0) |\n", g.name,
                    shape.c_str());
        b.release_all();
        continue;
      }
      auto time_skinny = [&](int bps, int splits, int features) {
        const cuda::Fp8SkinnyPlan plan = cuda::fp8_gemm_skinny_wgmma_plan_for(codes, ws[0], bps, splits, features);
        SEAM_CHECK(cuda::fp8_gemm_skinny_wgmma_workspace_bytes(plan) <= kWorkspace, "bench workspace too small");
        const double us = b.time_us([&](int i) {
          cuda::launch_fp8_gemm_skinny_wgmma(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), workspace,
                                             kWorkspace, bps, splits, features);
        });
        skinny_row(std::string("fp8 ") + g.name + " skinny " + std::to_string(plan.features) + "f " +
                       std::to_string(plan.blocks_per_sm) + "/SM " + std::to_string(plan.splits) + " split" +
                       (plan.splits > 1 ? "s" : "") + (splits > 0 ? " (forced)" : "") +
                       (bps == 0 && splits == 0 && features == 0 ? " (default)" : ""),
                   shape, us, w_bytes);
      };
      time_skinny(0, 0, 0);    // the default plan (what linear_fp8 runs)
      time_skinny(1, 0, 128);  // each variant at the rule's splits
      time_skinny(2, 0, 128);
      time_skinny(1, 0, 256);
      if (m == 64)
        for (int features : {128, 256})
          for (int s : {1, 2, 3, 4, 6, 8}) time_skinny(1, s, features);
      bool lt_ran = true;
      const double us_lt = b.time_us([&](int i) {
        lt_ran = lt.run(out, codes, scales, w_of(i), Tensor{}, false, b.gpu().capturing(), b.stream()) && lt_ran;
      });
      if (lt_ran)
        skinny_row(std::string("fp8 ") + g.name + " cuBLASLt route", shape, us_lt, w_bytes);
      else
        std::printf("| %-44s | %-22s | (cuBLASLt has no algorithm at this M) |\n", g.name, shape.c_str());
      if (m == 64) {
        const double us_op = b.time_us([&](int i) { b.gpu().linear_fp8(out, x, w_of(i), Tensor{}, false); });
        skinny_row(std::string("linear_fp8 ") + g.name + " (quantize + routed product)", shape, us_op, w_bytes);
        // 128-block weights (the same codes, one scale a 128 x 128 block): no cuBLASLt mode on Hopper,
        // so the skinny GEMM against the one-block wgmma GEMM.
        const int64_t n_kb = g.n_in / 128;
        Fp8Weight wb = ws[0];
        wb.w_scheme = Fp8WeightScheme::block128;
        wb.act = Fp8ActScheme::dynamic_group128;
        wb.w_scale = b.random(DType::f32, {g.n_out, n_kb}, 0.01f);
        std::vector<Fp8Weight> wbs(size_t(copies), wb);
        for (int c = 0; c < copies; ++c) wbs[size_t(c)].w = ws[size_t(c)].w;
        const Tensor bscales = b.alloc(DType::f32, {n_kb, m});
        cuda::launch_fp8_quantize_act(codes, bscales, x, wb, b.stream());
        const double us_bs = b.time_us([&](int i) {
          cuda::launch_fp8_gemm_skinny_wgmma(out, codes, bscales, wbs[size_t(i % copies)], Tensor{}, false, b.stream(),
                                             workspace, kWorkspace);
        });
        skinny_row(std::string("fp8 ") + g.name + " block128 skinny (default)", shape, us_bs, w_bytes);
        const double us_bw = b.time_us([&](int i) {
          cuda::launch_fp8_gemm_wgmma(out, codes, bscales, wbs[size_t(i % copies)], Tensor{}, false, b.stream());
        });
        skinny_row(std::string("fp8 ") + g.name + " block128 one-block wgmma", shape, us_bw, w_bytes);
      }
      b.release_all();
    }
  b.gpu().synchronize();
  SEAM_CUDA_CHECK(cudaFree(workspace));
}

}  // namespace seam::kbench
