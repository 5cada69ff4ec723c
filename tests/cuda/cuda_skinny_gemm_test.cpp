// The skinny tensor-core GEMM (skinny_gemm.h), launched directly whatever the choice rule says,
// against the CPU reference: both n-tile counts (rows 1..16 across the 8-row boundary), K from
// one 32-k chunk (one warp's slice, seven empty) to chunk counts that leave a partial unrolled
// group, n_out not a multiple of the 16 features, bias, strided x rows, f32 logits and the
// accumulate form (out += x @ w^T into a random residual).
#include "backend/cuda/skinny_gemm.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaSkinnyGemm : public CudaTest {
 protected:
  void check(DType t, DType out_t, int64_t n, int64_t in, int64_t n_out, bool with_bias, bool strided,
             bool accumulate) {
    SCOPED_TRACE(std::string(short_name(t)) + "->" + short_name(out_t) + " n " + std::to_string(n) + " in " +
                 std::to_string(in) + " out " + std::to_string(n_out) + (with_bias ? " bias" : "") +
                 (strided ? " strided" : "") + (accumulate ? " accumulate" : ""));
    const int64_t wide = strided ? in + 8 : in;
    auto x_h = round_to(random_normal(size_t(n * wide), rng), t);
    auto w_h = round_to(random_normal(size_t(n_out * in), rng, 1.f / std::sqrt(float(in))), t);
    auto b_h = round_to(random_normal(size_t(n_out), rng), t);
    auto res_h = round_to(random_normal(size_t(n * n_out), rng), out_t);
    Tensor x_buf = upload(x_h, t, {n, wide});
    Tensor x = strided ? x_buf.slice_cols(8, in) : x_buf;
    Tensor w = upload(w_h, t, {n_out, in});
    Tensor bias = with_bias ? upload(b_h, t, {n_out}) : Tensor{};
    Tensor out = accumulate ? upload(res_h, out_t, {n, n_out}) : empty(out_t, {n, n_out});  // empty: NaN
    ASSERT_TRUE(cuda::skinny_gemm_applies(out, x, w, bias));
    cuda::launch_skinny_gemm(out, x, w, bias, accumulate, static_cast<cudaStream_t>(cuda_backend_stream(*gpu)));
    std::vector<float> ref = accumulate ? res_h : std::vector<float>(size_t(n * n_out));
    Tensor xr = host_view(x_h, {n, wide});
    const Tensor xv = strided ? xr.slice_cols(8, in) : xr;
    const Tensor bv = with_bias ? host_view(b_h, {n_out}) : Tensor{};
    if (accumulate)
      cpu.linear_accumulate(host_view(ref, {n, n_out}), xv, host_view(w_h, {n_out, in}), bv);
    else
      cpu.linear(host_view(ref, {n, n_out}), xv, host_view(w_h, {n_out, in}), bv);
    const Tolerance tol = out_t == DType::f32 ? Tolerance{1e-4, 1e-5} : tolerance_for(t);
    expect_close(download(out), round_to(ref, out_t), tol, "skinny_gemm");
  }
};

TEST_F(CudaSkinnyGemm, EveryTileCountMatchesCpu) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t n : {1, 2, 7, 8, 9, 15, 16}) {
      check(t, t, n, 896, 1000, n % 2 == 1, n % 3 == 0, false);
      check(t, t, n, 32, 48, false, false, false);  // one chunk: one slice, the others idle
      check(t, t, n, 4096, 100, n % 2 == 0, false, false);
    }
}

TEST_F(CudaSkinnyGemm, ChunkCountsAndWidthsMatchCpu) {
  // 4864 = 152 chunks (19 a warp: not a multiple of the unroll); 14336 = 448; 96 = 3 chunks.
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t in : {96, 160, 4864, 14336})
      for (int64_t n_out : {13, 16, 17, 1152})
        for (int64_t n : {3, 9, 16}) check(t, t, n, in, n_out, n_out == 17, n == 9, false);
  // A wide projection (many blocks) and a long K (56 chunks a warp).
  for (DType t : {DType::bf16, DType::f16}) {
    check(t, t, 5, 4096, 6144, true, false, false);
    check(t, t, 16, 896, 9728, false, true, true);
    check(t, DType::f32, 11, 14336, 300, false, false, false);
  }
}

TEST_F(CudaSkinnyGemm, LogitsAccumulateAndBiasMatchCpu) {
  for (DType t : {DType::bf16, DType::f16}) {
    for (int64_t n : {2, 12, 16}) {
      check(t, DType::f32, n, 2048, 1000, false, false, false);
      check(t, DType::f32, n, 256, 72, true, true, false);
      check(t, t, n, 2048, 512, false, false, true);
      check(t, t, n, 896, 1152, true, true, true);
    }
  }
}

TEST_F(CudaSkinnyGemm, AppliesOnlyWhereItIsExact) {
  const int64_t in = 64, n_out = 32;
  Tensor w = empty(DType::bf16, {n_out, in}), w16 = empty(DType::f16, {n_out, in});
  Tensor x = empty(DType::bf16, {cuda::kSkinnyMaxRows, in}), o = empty(DType::bf16, {cuda::kSkinnyMaxRows, n_out});
  Tensor x_big = empty(DType::bf16, {cuda::kSkinnyMaxRows + 1, in});
  Tensor o_big = empty(DType::bf16, {cuda::kSkinnyMaxRows + 1, n_out});
  Tensor of = empty(DType::f32, {cuda::kSkinnyMaxRows, n_out});
  EXPECT_TRUE(cuda::skinny_gemm_applies(o, x, w, Tensor{}));
  EXPECT_TRUE(cuda::skinny_gemm_applies(of, x, w, Tensor{}));
  EXPECT_FALSE(cuda::skinny_gemm_applies(o_big, x_big, w, Tensor{}));  // too many rows: cuBLASLt
  EXPECT_FALSE(cuda::skinny_gemm_applies(o, x, w16, Tensor{}));        // mixed dtypes
  Tensor w40 = empty(DType::bf16, {n_out, 40}), x40 = empty(DType::bf16, {4, 40});
  EXPECT_FALSE(cuda::skinny_gemm_applies(o.rows(4), x40, w40, Tensor{}));  // n_in not whole chunks
  Tensor x_wide = empty(DType::bf16, {4, in + 8});
  EXPECT_FALSE(cuda::skinny_gemm_applies(o.rows(4), x_wide.slice_cols(1, in), w, Tensor{}));  // unaligned rows
  Tensor xf = empty(DType::f32, {4, in}), wf = empty(DType::f32, {n_out, in}), off = empty(DType::f32, {4, n_out});
  EXPECT_FALSE(cuda::skinny_gemm_applies(off, xf, wf, Tensor{}));  // float32 stays on cuBLASLt
}

}  // namespace
}  // namespace seam::test
