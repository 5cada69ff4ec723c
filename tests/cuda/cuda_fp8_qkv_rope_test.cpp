// The FP8 qkv product's tail from cuBLASLt's sums (SEAM_FP8_QKV_ROPE_FUSED=1, the default:
// CudaBackend::qkv_rope_store_fp8_lt, rope_from_fp8_sums.h) against the
// decomposition it replaces (=0: the norm's quantizer, fp8_product's cuBLASLt route with the scale
// epilogue, then rope_store_kv), bit for bit: qkv (q and k rotated, v) and both caches. Cases
// cover bf16 / f16, two head shapes (one with LongRoPE's second table), bias, a bf16 and an E4M3
// cache (with scales), the dynamic and the static activation scheme, rows at the GEMV (not fused)
// and past it, and tokens whose slot is skipped (-1: their V must still reach qkv, nothing the
// cache). 101 rows leave a partial last block at 2 and 4 tokens a block (SEAM_FP8_QKV_ROPE_TOKENS).
#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>

#include "backend/cuda/rope_from_fp8_sums.h"
#include "fp8_test_fixture.h"

namespace seam::test {
namespace {

struct HeadShape {
  int64_t heads, kv, d;
};

TEST_F(CudaFp8, QkvRopeStoreFromSumsEqualsDecomposition) {
  setenv("SEAM_FP8_QKV_ROPE_FUSED", "0", 1);
  std::unique_ptr<Backend> off = make_cuda_backend(0);
  unsetenv("SEAM_FP8_QKV_ROPE_FUSED");
  cuda::Fp8CublasLt probe;
  int n_fused = 0, n_cases = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (HeadShape sh : {HeadShape{8, 2, 64}, HeadShape{4, 4, 128}})
      for (bool fp8_cache : {false, true})
        for (bool with_bias : {false, true})
          for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::static_per_tensor})
            for (int64_t n : {3, 101, 300}) {
              const int64_t hidden = 256, width = (sh.heads + 2 * sh.kv) * sh.d, n_slots = 2 * n + 8;
              SCOPED_TRACE(std::string(short_name(t)) + " heads " + std::to_string(sh.heads) + "/" +
                           std::to_string(sh.kv) + "x" + std::to_string(sh.d) + (fp8_cache ? " fp8 cache" : "") +
                           (with_bias ? " bias" : "") + " " + fp8_act_scheme_name(act) + " n " + std::to_string(n));
              const Case c{Fp8WeightScheme::per_channel, act, n, hidden, width, 0.f, with_bias, false};
              Weights W;
              make_weights(c, W);
              const Tensor x = upload(make_x(c, t), t, {n, hidden});
              const Tensor g = upload(round_to(random_normal(size_t(hidden), rng), t), t, {hidden});
              const Tensor bias =
                  with_bias ? upload(round_to(random_normal(size_t(width), rng), t), t, {width}) : Tensor();
              std::vector<int32_t> pos(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
              std::vector<int32_t> all(static_cast<size_t>(n_slots));
              std::iota(all.begin(), all.end(), 0);
              std::shuffle(all.begin(), all.end(), rng);
              for (int64_t i = 0; i < n; ++i) {
                pos[size_t(i)] = int32_t(rng() % 5000);
                slots[size_t(i)] = i % 7 == 3 ? -1 : all[size_t(i)];  // distinct slots; every 7th skipped
              }
              std::vector<float> inv(static_cast<size_t>(sh.d / 2));
              for (int64_t i = 0; i < sh.d / 2; ++i) inv[size_t(i)] = std::pow(10000.f, -2.f * float(i) / float(sh.d));
              const DType cache_t = fp8_cache ? DType::fp8_e4m3 : t;
              const size_t cache_bytes = size_t(n_slots * sh.kv * sh.d) * dtype_size(cache_t);
              std::vector<uint8_t> cache0(cache_bytes);
              for (auto& b : cache0) b = uint8_t(rng() & 0x3f);  // finite in every cache type
              const auto cache = [&] {
                void* p = gpu->alloc(cache_bytes);
                owned_.push_back(p);
                gpu->copy_h2d(p, cache0.data(), cache_bytes);
                return Tensor(p, cache_t, Device::cuda, {n_slots, sh.kv, sh.d});
              };
              RopeStoreArgs ra;
              ra.n_heads = int(sh.heads);
              ra.positions = upload_index(pos, {n});
              ra.slots = upload_index(slots, {n});
              ra.inv_freq = upload(inv, DType::f32, {sh.d / 2});
              if (sh.d == 128) {  // LongRoPE's second table from position 2,500 (about half the tokens)
                std::vector<float> inv_long = inv;
                for (float& f : inv_long) f *= 0.25f;
                ra.inv_freq_long = upload(inv_long, DType::f32, {sh.d / 2});
                ra.long_from = 2500;
              }
              ra.k_cache = cache();
              ra.v_cache = cache();
              if (fp8_cache) ra.kv_scales = KvScales{0.5f, 2.f};
              RopeStoreArgs rb = ra;
              rb.k_cache = cache();
              rb.v_cache = cache();
              const Tensor qa = empty(t, {n, width}), qb = empty(t, {n, width});
              const Tensor na = empty(t, {n, hidden}), nb = empty(t, {n, hidden});
              gpu->synchronize();
              const int64_t before = cuda::rope_store_kv_from_fp8_sums_launches();
              gpu->rms_norm_qkv_rope_store_fp8(qa, na, x, g, 1e-6f, W.gpu, bias, ra);
              gpu->synchronize();
              const int64_t fused = cuda::rope_store_kv_from_fp8_sums_launches() - before;
              off->rms_norm_qkv_rope_store_fp8(qb, nb, x, g, 1e-6f, W.gpu, bias, rb);
              off->synchronize();
              EXPECT_EQ(cuda::rope_store_kv_from_fp8_sums_launches() - before, fused)
                  << "SEAM_FP8_QKV_ROPE_FUSED=0 ran the fused kernel";
              const bool expect_fused = n > cuda::kFp8GemvMaxRows &&
                                        probe.has_algorithm(cuda::Fp8CublasLt::Route::unscaled, n, W.gpu, DType::f32);
              EXPECT_EQ(fused > 0, expect_fused);
              n_fused += expect_fused;
              ++n_cases;
              const auto bytes_of = [&](const Tensor& d, size_t n_bytes) {
                std::vector<uint8_t> h(n_bytes);
                gpu->copy_d2h(h.data(), d.data, n_bytes);
                gpu->synchronize();
                return h;
              };
              // Raw bytes (a NaN compares equal to the same NaN); the first difference is named.
              const auto expect_same = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                           const char* what, size_t elem, size_t row_elems) {
                const auto diff = std::mismatch(a.begin(), a.end(), b.begin());
                if (diff.first == a.end()) return;
                const size_t at = size_t(diff.first - a.begin()) / elem;
                ADD_FAILURE() << what << " differs from the decomposition first at element " << at << " (row "
                              << at / row_elems << ", column " << at % row_elems << ")";
              };
              const size_t qkv_bytes = size_t(n * width) * dtype_size(t), kv_row = size_t(sh.kv * sh.d);
              expect_same(bytes_of(qa, qkv_bytes), bytes_of(qb, qkv_bytes), "qkv", dtype_size(t), size_t(width));
              const std::vector<uint8_t> ka = bytes_of(ra.k_cache, cache_bytes), va = bytes_of(ra.v_cache, cache_bytes);
              expect_same(ka, bytes_of(rb.k_cache, cache_bytes), "k_cache", dtype_size(cache_t), kv_row);
              expect_same(va, bytes_of(rb.v_cache, cache_bytes), "v_cache", dtype_size(cache_t), kv_row);
              EXPECT_NE(ka, cache0);  // the stored slots changed
              EXPECT_NE(va, cache0);
            }
  EXPECT_EQ(n_cases, 2 * 2 * 2 * 2 * 2 * 3);
  // Past the GEMV cuBLASLt's unscaled route exists on the H200 for these shapes: the fused
  // kernel must have been the route somewhere, or the test compared the decomposition with itself.
  EXPECT_GT(n_fused, 0);
}

}  // namespace
}  // namespace seam::test
