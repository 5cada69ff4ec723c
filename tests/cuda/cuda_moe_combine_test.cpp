// moe_combine's two forms (moe_combine.h): the vector form must store the scalar form's bits in
// out, for bf16 and f16 expert rows at decode and prefill sizes, top-2 and top-8, out contiguous
// or a view with a 16-byte-aligned row stride (vector) or an odd one (the launcher falls back to
// the scalar form); float32 expert rows (always the scalar form) are checked too. Both are also
// held against the definition computed on the host, bit for bit: out[i] += sum_j w[i k + j]
// y[i k + j], j in order in float32 (fma), rounded once. Rows of 2,048, 2,880 and 24 columns.
#include <cstring>

#include "backend/cuda/moe_combine.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaMoeCombine : public CudaTest {};

TEST_F(CudaMoeCombine, VectorFormStoresTheScalarFormsBits) {
  // H: Qwen3-30B-A3B's 2,048 (256 pieces of 8 columns a row: one a thread of a block), gpt-oss's
  // 2,880 and 24 (pieces a row not a multiple of the block: rows split across blocks and threads).
  for (int64_t H : {2048, 2880, 24})
    for (DType t : {DType::bf16, DType::f16})
      for (bool f32_rows : {false, true})
        for (int64_t k : {2, 8})
          for (int64_t n : {1, 64, 1000})
            for (int64_t pad : {0, 8, 1}) {  // out's row stride H + pad: contiguous, aligned view, odd view
              SCOPED_TRACE(std::string(short_name(t)) + (f32_rows ? " f32 rows" : "") + " H " + std::to_string(H) +
                           " k " + std::to_string(k) + " n " + std::to_string(n) + " pad " + std::to_string(pad));
              const DType te = f32_rows ? DType::f32 : t;
              const auto y_h = round_to(random_normal(size_t(n * k * H), rng), te);
              const auto out_h = round_to(random_normal(size_t(n * (H + pad)), rng, 4.f), t);
              std::vector<float> w_h(size_t(n * k));
              std::uniform_real_distribution<float> u(0.f, 1.f);
              for (float& w : w_h) w = u(rng);
              Tensor y = upload(y_h, te, {n * k, H}), w = upload(w_h, DType::f32, {n, k});
              auto run = [&](cuda::MoeCombineForm form) {
                Tensor base = upload(out_h, t, {n, H + pad});
                cuda::launch_moe_combine(base.slice_cols(0, H), y, w, stream(), form);
                return base;
              };
              const Tensor a = run(cuda::MoeCombineForm::scalar), b = run(cuda::MoeCombineForm::vector);
              // The vector kernel runs where the launcher says it does: 16-bit rows, aligned out rows.
              EXPECT_EQ(cuda::moe_combine_takes_vector(b.slice_cols(0, H), y, cuda::MoeCombineForm::vector),
                        !f32_rows && pad != 1);
              EXPECT_FALSE(cuda::moe_combine_takes_vector(a.slice_cols(0, H), y, cuda::MoeCombineForm::scalar));
              gpu->synchronize();
              const auto got_a = download(a), got_b = download(b);
              ASSERT_EQ(got_a.size(), got_b.size());
              for (size_t e = 0; e < got_a.size(); ++e)
                ASSERT_EQ(std::memcmp(&got_a[e], &got_b[e], sizeof(float)), 0)
                    << "the two forms differ first at element " << e << ": " << got_a[e] << " vs " << got_b[e];
              // The definition (float32 sums in slot order), one rounding of the output's dtype.
              std::vector<float> ref = out_h;
              for (int64_t i = 0; i < n; ++i)
                for (int64_t h = 0; h < H; ++h) {
                  float acc = 0.f;
                  for (int64_t j = 0; j < k; ++j)
                    acc = std::fma(w_h[size_t(i * k + j)], y_h[size_t((i * k + j) * H + h)], acc);
                  ref[size_t(i * (H + pad) + h)] += acc;
                }
              // Bit for bit: the kernels' fma chain from +0 in j order, one float add to out, one
              // rounding (round to nearest even) — the host's std::fma chain and round_to.
              const std::vector<float> want = round_to(ref, t);
              for (size_t e = 0; e < want.size(); ++e)
                ASSERT_EQ(got_a[e], want[e]) << "scalar form vs definition at element " << e;
              // The pad columns are out's and untouched.
              if (pad > 0) EXPECT_EQ(got_b[size_t(H)], out_h[size_t(H)]);
            }
}

}  // namespace
}  // namespace seam::test
