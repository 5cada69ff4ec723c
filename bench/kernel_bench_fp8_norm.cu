// seam_kernel_bench's FP8 norm-epilogue section (--focus): the residual stream's step between an FP8
// output projection (o_proj, down) and the next norm fusion on Llama-3.1-8B's hidden 4,096 — the scale
// epilogue (+ residual, fp8_scale_epilogue.h) then RMSNorm + quantize (fp8_rms_norm_quantize.h), two
// kernels, against the one kernel that does both (fp8_scale_norm_quantize.h, SEAM_FP8_NORM_EPILOGUE=1)
// — at a decode batch's 64 rows, a mixed step's 576 and a prefill chunk's 4,096. Bytes (both forms
// must move them): the float32 sums, the residual read and written, the codes written; the
// decomposition also reads the residual a second time.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_rms_norm_quantize.h"
#include "backend/cuda/fp8_scale_epilogue.h"
#include "backend/cuda/fp8_scale_norm_quantize.h"
#include "kernel_bench.h"

namespace seam::kbench {

void bench_fp8_scale_norm_quantize(Bench& b) {
  for (int64_t m : {int64_t(64), int64_t(576), int64_t(4096)}) {
    Fp8Weight w, next;
    w.w = b.alloc(DType::fp8_e4m3, {kHidden, 16});  // only its shape is read
    w.w_scale = b.random(DType::f32, {kHidden}, 0.01f);
    w.w_scheme = Fp8WeightScheme::per_channel;
    w.act = Fp8ActScheme::dynamic_per_token;
    next = w;
    next.w = b.alloc(DType::fp8_e4m3, {2 * kInter, kHidden});
    const Tensor sums = b.random(DType::f32, {m, kHidden}, 3000.f);
    const Tensor xs = b.random(DType::f32, {m}, 0.05f);
    const Tensor residual = b.random(DType::bf16, {m, kHidden}, 1.f);
    const Tensor g = b.random(DType::bf16, {kHidden}, 1.f);
    const Tensor codes = b.alloc(DType::fp8_e4m3, {m, kHidden});
    const Tensor scales = b.alloc(DType::f32, {1, m});
    const double bytes = double(m) * double(kHidden) * (4 + 2 + 2 + 1);
    const std::string shape = "M=" + std::to_string(m) + " hidden=" + std::to_string(kHidden);
    const double us_two = b.time_us([&](int) {
      cuda::launch_fp8_scale_epilogue(residual, sums.ptr<float>(), xs.ptr<float>(), w, Tensor(), true, b.stream());
      cuda::launch_fp8_rms_norm_quantize(codes, scales, residual, g, 1e-5f, next, b.stream());
    });
    b.row("fp8 scale epilogue + residual, then rms_norm quantize", shape, us_two, bytes, 0);
    const double us_one = b.time_us([&](int) {
      cuda::launch_fp8_scale_norm_quantize(residual, sums.ptr<float>(), xs.ptr<float>(), w, Tensor(), g, 1e-5f, next,
                                           codes.ptr<uint8_t>(), scales.ptr<float>(), 0, m, b.stream());
    });
    b.row("  in one kernel (SEAM_FP8_NORM_EPILOGUE=1)", shape, us_one, bytes, 0);
    b.release_all();
  }
}

}  // namespace seam::kbench
