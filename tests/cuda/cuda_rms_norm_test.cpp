// rms_norm's two kernels (rms_norm.h) against the CPU reference: the default by-size rule and the
// register form (a warp a row held in registers), each called by name, at the row counts where
// the by-size rule changes kernel (19 rows: a block a row; 1,100: a warp a row up to d 1,024),
// every float dtype, widths across the register form's vector counts (128 .. 2,048 bf16) and
// past it (2,056 and 4,096 bf16, 1,032 f32: it falls back), unaligned widths (37: it falls back), strided
// rows inside a wider buffer, per-head rows of a [n, heads, d] view inside qkv, and in place.
// Which operands the register form takes is asserted, so a fallback cannot pass for it.
#include <string>

#include "backend/cuda/rms_norm.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaRmsNorm : public CudaTest {};

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};
const cuda::RmsNormKernel kKernels[] = {cuda::RmsNormKernel::by_size, cuda::RmsNormKernel::rows_in_registers,
                                        cuda::RmsNormKernel::by_rows};

const char* name(cuda::RmsNormKernel k) {
  return k == cuda::RmsNormKernel::by_size ? "by_size" : k == cuda::RmsNormKernel::by_rows ? "by_rows" : "rows_in_registers";
}

TEST_F(CudaRmsNorm, BothKernelsMatchTheCpu) {
  for (DType t : kDtypes)
    for (int64_t d : {37, 128, 896, 1032, 2048, 2056, 4096})
      for (int64_t n : {1, 19, 1100}) {
        const int64_t elt = int64_t(dtype_size(t)), wide = d + 16 / elt;  // rows stay 16-byte aligned at d % 8 == 0
        auto x_h = round_to(random_normal(size_t(n * wide), rng, 2.f), t);
        auto w_h = round_to(random_normal(size_t(d), rng), t);
        Tensor x_buf = upload(x_h, t, {n, wide});
        Tensor x = x_buf.slice_cols(16 / elt, d), w = upload(w_h, t, {d});
        std::vector<float> ref(size_t(n * d));
        cpu.rms_norm(host_view(ref, {n, d}), host_view(x_h, {n, wide}).slice_cols(16 / elt, d), host_view(w_h, {d}),
                     1e-5f);
        for (cuda::RmsNormKernel k : kKernels) {
          SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d) + " n " + std::to_string(n) + " " +
                       name(k));
          Tensor out = empty(t, {n, d});
          if (k == cuda::RmsNormKernel::rows_in_registers) {
            // 16-byte rows up to 8 x 32 vectors a row.
            const bool fits = (d * elt) % 16 == 0 && d * elt <= 8 * 32 * 16;
            EXPECT_EQ(cuda::rms_norm_rows_applies(out, x, w), fits);
          }
          cuda::launch_rms_norm(out, x, w, 1e-5f, stream(), k);
          expect_close(download(out), round_to(ref, t), tolerance_for(t), "rms_norm");
        }
      }
}

// Per-head rows (q/k norm's use): a [n, heads, d] view of the q columns of a qkv buffer, in place.
TEST_F(CudaRmsNorm, PerHeadRowsInPlace) {
  for (DType t : kDtypes)
    for (cuda::RmsNormKernel k : kKernels) {
      SCOPED_TRACE(std::string(short_name(t)) + " " + name(k));
      const int64_t n = 1030, heads = 8, kv = 2, d = 128, width = (heads + 2 * kv) * d;
      auto qkv_h = round_to(random_normal(size_t(n * width), rng, 3.f), t);
      auto w_h = round_to(random_normal(size_t(d), rng), t);
      Tensor qkv = upload(qkv_h, t, {n, width}), w = upload(w_h, t, {d});
      Tensor q = qkv.slice_cols(0, heads * d).unflatten_last(heads, d);
      if (k == cuda::RmsNormKernel::rows_in_registers) EXPECT_TRUE(cuda::rms_norm_rows_applies(q, q, w));
      cuda::launch_rms_norm(q, q, w, 1e-6f, stream(), k);
      std::vector<float> ref = qkv_h;
      Tensor rq = host_view(ref, {n, width}).slice_cols(0, heads * d).unflatten_last(heads, d);
      cpu.rms_norm(rq, rq, host_view(w_h, {d}), 1e-6f);
      expect_close(download(qkv), round_to(ref, t), tolerance_for(t), "per-head rms_norm");
    }
}

// The default rule (by_rows) is the register form's bits from kRmsNormRegisterRows rows on and the
// by-size kernel's below: the forms sum in different orders, so a wrong threshold or a rule that
// ignored the row count shows as a bit difference on one side.
TEST_F(CudaRmsNorm, ByRowsPicksTheRegisterFormFromItsThresholdOn) {
  const int64_t d = 2048, edge = cuda::kRmsNormRegisterRows;
  for (int64_t n : {edge - 1, edge, edge + 77}) {
    SCOPED_TRACE("n " + std::to_string(n));
    auto x_h = round_to(random_normal(size_t(n * d), rng, 2.f), DType::bf16);
    auto w_h = round_to(random_normal(size_t(d), rng), DType::bf16);
    Tensor x = upload(x_h, DType::bf16, {n, d}), w = upload(w_h, DType::bf16, {d});
    auto run = [&](cuda::RmsNormKernel k) {
      Tensor out = empty(DType::bf16, {n, d});
      cuda::launch_rms_norm(out, x, w, 1e-5f, stream(), k);
      return download(out);
    };
    const auto by_rows = run(cuda::RmsNormKernel::by_rows), by_size = run(cuda::RmsNormKernel::by_size),
               regs = run(cuda::RmsNormKernel::rows_in_registers);
    ASSERT_NE(by_size, regs) << "the two forms must differ somewhere for the rule to be visible";
    EXPECT_EQ(by_rows, n >= edge ? regs : by_size);
  }
}

}  // namespace
}  // namespace seam::test
