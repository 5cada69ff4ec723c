// The CUDA logprobs and apply_logit_bias ops against the CPU reference (CpuBackend):
// logprobs within float32 rounding (the sums run in another order), top-k ids exactly
// (the logits are distinct but for deliberate ties, which both break to the lower id),
// rows with k = -1 untouched, a 128K vocabulary and k = 20, and logit_bias exactly.
#include <cmath>

#include "api/token_logprob.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaLogprobs : public CudaTest {};

TEST_F(CudaLogprobs, MatchesTheCpuReference) {
  if (!gpu) GTEST_SKIP() << "no CUDA device";
  const int K = kMaxTopLogprobs;
  for (const int vocab : {7, 1000, 128256}) {
    const std::vector<int32_t> ks = {20, -1, 0, 5, 20, 1};
    const int n = int(ks.size());
    std::vector<float> logits = random_normal(size_t(n) * size_t(vocab), rng, 3.f);
    // Row 4: ties at the top (three equal maxima) and a very large logit scale.
    float* tie = logits.data() + 4 * int64_t(vocab);
    for (int i = 0; i < vocab; ++i) tie[i] *= 100.f;
    for (int i : {vocab - 1, vocab / 2, 1}) tie[i] = 2000.f;
    std::vector<int32_t> sampled;
    for (int r = 0; r < n; ++r) sampled.push_back((r * 7919) % vocab);
    sampled[0] = vocab - 1;  // the vocabulary's last id

    // CPU reference on host copies, outputs pre-filled with sentinels as the GPU's.
    std::vector<int32_t> c_k = ks, c_s = sampled, c_ids(size_t(n) * K, -7777);
    std::vector<float> c_l = logits, c_out(size_t(n), NAN), c_top(size_t(n) * K, NAN);
    LogprobBatch cb;
    cb.n = n;
    cb.k = host_index(c_k, {n});
    cb.sampled = host_index(c_s, {n});
    cb.out_sampled = host_view(c_out, {n});
    cb.out_top_ids = host_index(c_ids, {n, K});
    cb.out_top = host_view(c_top, {n, K});
    cpu.logprobs(host_view(c_l, {n, vocab}), cb);
    cpu.synchronize();

    LogprobBatch gb;
    gb.n = n;
    gb.k = upload_index(ks, {n});
    gb.sampled = upload_index(sampled, {n});
    gb.out_sampled = empty(DType::f32, {n});
    gb.out_top_ids = empty(DType::i32, {n, K});
    gb.out_top = empty(DType::f32, {n, K});
    gpu->logprobs(upload(logits, DType::f32, {n, vocab}), gb);
    const std::vector<float> g_out = download(gb.out_sampled), g_top = download(gb.out_top);
    const std::vector<int32_t> g_ids = download_i32(gb.out_top_ids);

    for (int r = 0; r < n; ++r) {
      const std::string where = "vocab " + std::to_string(vocab) + " row " + std::to_string(r);
      if (ks[size_t(r)] < 0) {  // skipped: the poison is still there
        EXPECT_TRUE(std::isnan(g_out[size_t(r)])) << where;
        EXPECT_EQ(g_ids[size_t(r) * K], -7777) << where;
        continue;
      }
      EXPECT_NEAR(g_out[size_t(r)], c_out[size_t(r)], 1e-4 + 1e-5 * std::fabs(c_out[size_t(r)])) << where;
      for (int j = 0; j < K; ++j) {
        const size_t at = size_t(r) * K + size_t(j);
        EXPECT_EQ(g_ids[at], c_ids[at]) << where << " rank " << j;
        if (j < std::min(ks[size_t(r)], vocab))
          EXPECT_NEAR(g_top[at], c_top[at], 1e-4 + 1e-5 * std::fabs(c_top[at])) << where << " rank " << j;
        else
          EXPECT_TRUE(std::isnan(g_top[at])) << where << " rank " << j << " (past k: untouched)";
      }
    }
    EXPECT_EQ(g_ids[4 * size_t(K)], 1);  // the tie at the top goes to the lowest id
    EXPECT_EQ(g_ids[4 * size_t(K) + 1], vocab / 2);
  }
}

TEST_F(CudaLogprobs, LogitBiasMatchesTheCpu) {
  if (!gpu) GTEST_SKIP() << "no CUDA device";
  const int n = 3, vocab = 50000;
  std::vector<float> logits = random_normal(size_t(n) * vocab, rng);
  std::vector<int32_t> indptr = {0, 2, 2, 5}, tokens = {0, 49999, 7, 8, 9};
  std::vector<float> values = {100.f, -100.f, 1.5f, -2.5f, 0.25f};
  std::vector<float> ref = logits;
  LogitBiasBatch cb;
  cb.n = n;
  cb.nnz = 5;
  cb.indptr = host_index(indptr, {n + 1});
  cb.tokens = host_index(tokens, {5});
  cb.values = host_view(values, {5});
  cpu.apply_logit_bias(host_view(ref, {n, vocab}), cb);
  cpu.synchronize();
  LogitBiasBatch gb;
  gb.n = n;
  gb.nnz = 5;
  gb.indptr = upload_index(indptr, {n + 1});
  gb.tokens = upload_index(tokens, {5});
  gb.values = upload(values, DType::f32, {5});
  Tensor g = upload(logits, DType::f32, {n, vocab});
  gpu->apply_logit_bias(g, gb);
  EXPECT_EQ(download(g), ref);
}

}  // namespace
}  // namespace seam::test
