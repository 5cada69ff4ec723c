// moe_combine's two forms (moe_combine.h): the vector form must store the scalar form's bits in
// out, for bf16 and f16 expert rows at decode and prefill sizes, top-2 and top-8, out contiguous
// or a view with a 16-byte-aligned row stride (vector) or an odd one (the launcher falls back to
// the scalar form); float32 expert rows (always the scalar form) are checked too. Both are also
// held against the definition computed on the host: out[i] += sum_j w[i k + j] y[i k + j], j in
// order in float32, rounded once.
#include <cstring>

#include "backend/cuda/moe_combine.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaMoeCombine : public CudaTest {};

TEST_F(CudaMoeCombine, VectorFormStoresTheScalarFormsBits) {
  constexpr int64_t H = 2048;
  for (DType t : {DType::bf16, DType::f16})
    for (bool f32_rows : {false, true})
      for (int64_t k : {2, 8})
        for (int64_t n : {1, 64, 1000})
          for (int64_t pad : {0, 8, 1}) {  // out's row stride H + pad: contiguous, aligned view, odd view
            SCOPED_TRACE(std::string(short_name(t)) + (f32_rows ? " f32 rows" : "") + " k " + std::to_string(k) +
                         " n " + std::to_string(n) + " pad " + std::to_string(pad));
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
            gpu->synchronize();
            const auto got_a = download(a), got_b = download(b);
            ASSERT_EQ(got_a.size(), got_b.size());
            EXPECT_EQ(std::memcmp(got_a.data(), got_b.data(), got_a.size() * sizeof(float)), 0)
                << "the two forms differ";
            // The definition (float32 sums in slot order), one rounding of the output's dtype.
            std::vector<float> ref = out_h;
            for (int64_t i = 0; i < n; ++i)
              for (int64_t h = 0; h < H; ++h) {
                float acc = 0.f;
                for (int64_t j = 0; j < k; ++j)
                  acc = std::fma(w_h[size_t(i * k + j)], y_h[size_t((i * k + j) * H + h)], acc);
                ref[size_t(i * (H + pad) + h)] += acc;
              }
            expect_close(got_a, round_to(ref, t), tolerance_for(t), "scalar form vs definition");
            // The pad columns are out's and untouched.
            if (pad > 0) EXPECT_EQ(got_b[size_t(H)], out_h[size_t(H)]);
          }
}

}  // namespace
}  // namespace seam::test
