// seam_kernel_bench's FP8 section (--fp8): the batch-1 GEMV on each inner loop,
// then the GEMMs at 64 and 4,096 rows: the wgmma kernels against the cuBLASLt route; then the
// skinny swap-AB GEMM at 8..64 rows (kernel_bench_fp8_skinny.cu).
#include "kernel_bench.h"
#include "backend/cuda/fp8_gated_act_quantize.h"

namespace seam::kbench {

// FP8 linear products (issue 22) at the 8B projections, M = 64 (decode batch) and 4,096 (prefill):
// per-channel E4M3 weights (quantized from random bf16), per-token activations quantized once
// outside the timing, bf16 out. The wgmma GEMM with its fused scales (fp8_gemm_wgmma.h, tile in
// the name) against the cuBLASLt route it replaces (fp8_cublaslt.h: on the H200 the unscaled
// E4M3 GEMM + the float32 scale epilogue), and the whole op (activation quantization + product)
// as linear_fp8 runs it; the warp-specialised wgmma GEMM (fp8_gemm_wgmma_ws.h) beside the
// one-block one. Bytes: weight + x codes once, out once; FLOPs 2 M N K against the
// 1,580 TFLOP/s FP8 peak issue 22 measures against.
void bench_fp8_gemm(Bench& b) {
  constexpr double kFp8TFlops = 1580.0;
  const auto& shapes = kLlamaProjections;
  cuda::Fp8CublasLt lt(true), lt_promoted(false);  // fast accumulation (the default) and promoted
  auto row = [&](const std::string& op, const std::string& shape, double us, double bytes, double flops) {
    const double gbs = bytes / (us * 1e-6) / 1e9, tflops = flops / (us * 1e-6) / 1e12;
    std::printf("| %-40s | %-26s | %10.1f | %7.1f TFLOP/s %5.1f%% | %6.0f GB/s %5.1f%% |\n", op.c_str(), shape.c_str(),
                us, tflops, 100 * tflops / kFp8TFlops, gbs, 100 * gbs / (b.copy_tbs() * 1000));
    std::fflush(stdout);
  };
  int n_sms = 0;
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
  // The batch-1 decode GEMV (fp8_gemv.h) on each inner loop (SEAM_FP8_GEMV): the CUDA-core FMAs
  // and the E4M3 tensor cores, with the activation quantization in its prologue (x bf16), gate_up
  // with its GLU epilogue as a decode step runs it. Bytes: weight + x + out once (the weights
  // dominate: TB/s against the copy bandwidth is the figure to read); weights cycled through
  // enough copies to leave the L2.
  for (const auto& g : shapes) {
    const int64_t m = 1;
    const bool glu = g.n_out == 2 * kInter;
    const double w_bytes = double(g.n_out * g.n_in);
    const int copies = std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
    const std::vector<Fp8Weight> ws = fp8_weights(b, g.n_out, g.n_in, copies);
    const Tensor x = b.random(DType::bf16, {m, g.n_in});
    const int64_t n_out = glu ? g.n_out / 2 : g.n_out;
    const Tensor out = b.alloc(DType::bf16, {m, n_out});
    cuda::Fp8GemvFusion f;
    f.glu = glu;
    const double bytes = w_bytes + double(m * g.n_in) * 2 + double(m * n_out) * 2;
    const double flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
    const std::string shape = "M=1 N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
    for (cuda::Fp8GemvKernel k : {cuda::Fp8GemvKernel::fma, cuda::Fp8GemvKernel::mma}) {
      const double us = b.time_us(
          [&](int i) { cuda::launch_fp8_gemv(out, x, ws[size_t(i % copies)], Tensor{}, false, b.stream(), f, k); });
      row(std::string("fp8 gemv ") + g.name + (glu ? " + silu_mul" : "") +
              (k == cuda::Fp8GemvKernel::mma ? " (mma)" : " (fma)"),
          shape, us, bytes, flops);
    }
    b.release_all();
  }
  for (int64_t m : {int64_t(64), int64_t(4096)})
    for (const auto& g : shapes) {
      const double w_bytes = double(g.n_out * g.n_in);
      const int copies = m >= 1024 ? 1 : std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
      const std::vector<Fp8Weight> ws = fp8_weights(b, g.n_out, g.n_in, copies);
      const Tensor x = b.random(DType::bf16, {m, g.n_in});
      const Tensor codes = b.alloc(DType::fp8_e4m3, {m, g.n_in}), scales = b.alloc(DType::f32, {1, m});
      cuda::launch_fp8_quantize_act(codes, scales, x, ws[0], b.stream());
      const Tensor out = b.alloc(DType::bf16, {m, g.n_out});
      const double bytes = w_bytes + double(m * g.n_in) + double(m * g.n_out) * 2;
      const double flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
      const std::string shape =
          "M=" + std::to_string(m) + " N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
      auto w_of = [&](int i) -> const Fp8Weight& { return ws[size_t(i % copies)]; };
      if (cuda::fp8_gemm_wgmma_applies(out, codes, ws[0])) {
        const cuda::Fp8WgmmaTile t = cuda::fp8_gemm_wgmma_tile(m, g.n_out, n_sms);
        for (int overlap : {1, 0}) {  // the main loop's two forms (fp8_gemm_wgmma.h)
          const double us = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), overlap);
          });
          row(std::string("fp8 ") + g.name + " wgmma " + std::to_string(t.rows) + "x" + std::to_string(t.cols) +
                  (overlap ? " overlap" : " serial"),
              shape, us, bytes, flops);
        }
      }
      // The warp-specialised TMA kernel (fp8_gemm_wgmma_ws.h): SEAM_FP8_GEMM=ws takes it past 64 rows.
      if (cuda::fp8_gemm_wgmma_ws_applies(out, codes, ws[0])) {
        // Its two tile widths (SEAM_FP8_WS_TILE_N), promoted and fast accumulation (SEAM_FP8_ACCUM),
        // interleaved, the 256-wide pair twice in both orders: back-to-back rows of FP8 GEMMs at
        // ~1.1 PFLOP/s move with the GPU's power and clock, so one order alone can mislead.
        using A = cuda::Fp8WsAccum;
        const std::pair<A, int> order[] = {{A::promoted, 256}, {A::fast, 256}, {A::promoted, 128},
                                           {A::fast, 128},     {A::fast, 256}, {A::promoted, 256}};
        for (const auto& [accum_, cols_] : order) {
          const A accum = accum_;
          const int cols = cols_;
          const double us = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), cols, accum);
          });
          row(std::string("fp8 ") + g.name + " wgmma ws " + std::to_string(cuda::kFp8WsTileRows) + "x" +
                  std::to_string(cols) + (accum == A::fast ? " fast" : "") +
                  (m > cuda::kFp8WsMinRows ? "" : " (not routed)"),
              shape, us, bytes, flops);
        }
        // Clusters of 2 with the weight multicast (SEAM_FP8_WS_CLUSTER=2), fast, 128 x 256, twice
        // around the alone form.
        for (int cluster : {2, 1, 2}) {
          const double us_cl = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), 256,
                                           cuda::Fp8WsAccum::fast, cluster);
          });
          row(std::string("fp8 ") + g.name + " wgmma ws 128x256 fast, cluster " + std::to_string(cluster), shape, us_cl,
              bytes, flops);
        }
        // The residual projections (o, down) accumulate into the residual in a layer: out += product.
        if (g.n_out != 2 * kInter && m > cuda::kFp8WsMinRows) {
          const double us_acc = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws(out, codes, scales, w_of(i), Tensor{}, true, b.stream());
          });
          row(std::string("fp8 ") + g.name + " wgmma ws 128x256 fast, out +=", shape, us_acc,
              bytes + double(m * g.n_out) * 2, flops);
        }
        // gate_up: the gated product (the activation in the epilogue, act [m, inter] written) against
        // the product into [gate | up] followed by the gated activation + act's FP8 codes.
        const Tensor act = b.alloc(DType::bf16, {m, g.n_out / 2});
        if (g.n_out == 2 * kInter && m > cuda::kFp8WsMinRows && cuda::fp8_gemm_wgmma_ws_glu_applies(act, codes, ws[0])) {
          const Tensor act_codes = b.alloc(DType::fp8_e4m3, {m, g.n_out / 2}), act_scales = b.alloc(DType::f32, {1, m});
          for (int cluster : {1, 2}) {
            const double us_glu = b.time_us([&](int i) {
              cuda::launch_fp8_gemm_wgmma_ws_glu(act, codes, scales, w_of(i), Activation::silu, b.stream(),
                                                 cuda::Fp8WsAccum::by_switch, cluster);
            });
            row(std::string("fp8 ") + g.name + " wgmma ws glu (silu in the epilogue), cluster " + std::to_string(cluster),
                shape, us_glu, w_bytes + double(m * g.n_in) + double(m * g.n_out), flops);
          }
          const double us_glu_q = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws_glu(act, codes, scales, w_of(i), Activation::silu, b.stream());
            cuda::launch_fp8_quantize_act(act_codes, act_scales, act, w_of(i), b.stream());
          });
          row(std::string("fp8 ") + g.name + " glu + quantize act", shape, us_glu_q, 0, flops);
          const double us_split = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws(out, codes, scales, w_of(i), Tensor{}, false, b.stream());
            cuda::launch_fp8_gated_act_quantize(act, act_codes, act_scales, out, Activation::silu,
                                                Fp8ActScheme::dynamic_per_token, 0.f, b.stream());
          });
          row(std::string("fp8 ") + g.name + " product + gated act quantize", shape, us_split, 0, flops);
        }
      } else {
        std::printf("| %-40s | %-26s | (wgmma GEMM not available: needs sm_90a build + CC 9.0) |\n", g.name,
                    shape.c_str());
      }
      const double us_lt = b.time_us([&](int i) {
        SEAM_CHECK(lt.run(out, codes, scales, w_of(i), Tensor{}, false, b.gpu().capturing(), b.stream()),
                   "cuBLASLt has no FP8 route for ", shape);
      });
      row(std::string("fp8 ") + g.name + " cuBLASLt route, fast", shape, us_lt, bytes, flops);
      const double us_lt_p = b.time_us([&](int i) {
        SEAM_CHECK(lt_promoted.run(out, codes, scales, w_of(i), Tensor{}, false, b.gpu().capturing(), b.stream()),
                   "cuBLASLt has no FP8 route for ", shape);
      });
      row(std::string("fp8 ") + g.name + " cuBLASLt route, promoted", shape, us_lt_p, bytes, flops);
      const double us_lt_acc = b.time_us([&](int i) {
        SEAM_CHECK(lt.run(out, codes, scales, w_of(i), Tensor{}, true, b.gpu().capturing(), b.stream()),
                   "cuBLASLt has no FP8 route for ", shape);
      });
      row(std::string("fp8 ") + g.name + " cuBLASLt route, fast, out +=", shape, us_lt_acc,
          bytes + double(m * g.n_out) * 2, flops);
      const double us_op = b.time_us([&](int i) { b.gpu().linear_fp8(out, x, w_of(i), Tensor{}, false); });
      row(std::string("linear_fp8 ") + g.name + " (quantize + product)", shape, us_op, bytes + double(m * g.n_in) * 2,
          flops);
      b.release_all();
    }
  bench_fp8_skinny(b);  // the skinny GEMM at 8..64 rows (kernel_bench_fp8_skinny.cu)
}

}  // namespace seam::kbench
