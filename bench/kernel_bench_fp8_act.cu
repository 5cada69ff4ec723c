// seam_kernel_bench's FP8 gated-activation section (--focus): the fused scale + gated activation +
// per-token quantize kernel that follows cuBLASLt's unscaled gate_up sums (fp8_scaled_gated_act_quantize.h)
// on Llama-3.1-8B's MLP (inter 14,336), at the row counts the prefill of 4,096 tokens runs it (two
// chunks of 2,048 rows), a mixed step's 576 and a decode batch's 64 (there also on clusters of 2 and 4 CTAs a row). Bytes: the float32 sums read
// once, act (bf16) and its codes written once; the floor is those bytes over the copy bandwidth.
// (Four variants of the kernel — the next wave's loads in flight, act held in shared memory, 3
// blocks an SM, waves of 4 — were timed here and were no faster: docs/performance.md.)
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_scaled_gated_act_quantize.h"
#include "kernel_bench.h"

namespace seam::kbench {

void bench_fp8_scaled_gated_act(Bench& b) {
  const int64_t inter = kInter;
  Fp8Weight w;
  w.w = b.alloc(DType::fp8_e4m3, {2 * inter, 16});  // only its shape is read
  w.w_scale = b.random(DType::f32, {2 * inter}, 0.01f);
  w.w_scheme = Fp8WeightScheme::per_channel;
  w.act = Fp8ActScheme::dynamic_per_token;
  for (int64_t m : {int64_t(2048), int64_t(576), int64_t(64)}) {
    const Tensor sums = b.random(DType::f32, {m, 2 * inter}, 3000.f);
    const Tensor xs = b.random(DType::f32, {m}, 0.05f);
    const Tensor act = b.alloc(DType::bf16, {m, inter}), codes = b.alloc(DType::fp8_e4m3, {m, inter});
    const Tensor scales = b.alloc(DType::f32, {m});
    const double bytes = double(m) * double(inter) * (8 + 2 + 1);
    const std::string shape = "M=" + std::to_string(m) + " inter=" + std::to_string(inter);
    // One CTA a row, then (decode batches: the 1,024-thread layout) a row on a cluster of 2 and of 4 CTAs.
    for (int cluster : {1, 2, 4}) {
      if (cluster > 1 && !cuda::fp8_scaled_gated_act_decode_layout(m, inter)) break;  // clusters change nothing
      const double us = b.time_us([&](int) {
        cuda::launch_fp8_scaled_gated_act_quantize(act, codes.ptr<uint8_t>(), scales.ptr<float>(), sums.ptr<float>(),
                                                   xs.ptr<float>(), w, Activation::silu, 0.f, b.stream(), true,
                                                   cluster);
      });
      b.row(cluster == 1 ? "fp8 scaled gated act quantize" : "  on clusters of " + std::to_string(cluster), shape, us,
            bytes, 0);
    }
    b.release_all();
    w.w = b.alloc(DType::fp8_e4m3, {2 * inter, 16});
    w.w_scale = b.random(DType::f32, {2 * inter}, 0.01f);
  }
}

}  // namespace seam::kbench
