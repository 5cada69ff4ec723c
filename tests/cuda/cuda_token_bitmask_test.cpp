// The CUDA apply_token_bitmask op against the CPU reference (CpuBackend): bit-exact, over
// vocabularies that do and do not fill their last word, up to Llama-3's 128,256 tokens, with
// strided logit rows, unlisted rows untouched and an empty row list a no-op.
#include <cmath>

#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaTokenBitmask : public CudaTest {};

TEST_F(CudaTokenBitmask, MatchesTheCpuReference) {
  if (!gpu) GTEST_SKIP() << "no CUDA device";
  for (const int vocab : {7, 32, 1000, 32001, 128256}) {
    const int n = 6, n_words = (vocab + 31) / 32;
    std::vector<float> logits = random_normal(size_t(n) * size_t(vocab), rng, 3.f);
    const std::vector<int32_t> rows = {5, 0, 2, 3};  // rows 1 and 4 are unconstrained
    std::vector<int32_t> words(rows.size() * size_t(n_words));
    for (int32_t& w : words) w = int32_t(rng());
    words[0] = 0;                                    // a fully forbidden word
    words[size_t(n_words)] = -1;                     // a fully allowed word
    for (int i = 0; i < n_words; ++i) words[2 * size_t(n_words) + size_t(i)] = 0;  // row 2: nothing allowed
    std::vector<float> ref = logits;
    std::vector<int32_t> c_words = words, c_rows = rows;
    cpu.apply_token_bitmask(host_view(ref, {n, vocab}), host_index(c_words, {int64_t(rows.size()), n_words}),
                            host_index(c_rows, {int64_t(rows.size())}));
    Tensor g = upload(logits, DType::f32, {n, vocab});
    gpu->apply_token_bitmask(g, upload_index(words, {int64_t(rows.size()), n_words}),
                             upload_index(rows, {int64_t(rows.size())}));
    const std::vector<float> got = download(g);
    ASSERT_EQ(got.size(), ref.size());
    size_t n_bad = 0, n_inf = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      n_bad += !(got[i] == ref[i]);  // -inf == -inf
      n_inf += std::isinf(ref[i]);
    }
    EXPECT_EQ(n_bad, 0u) << "vocab " << vocab;
    EXPECT_GE(n_inf, size_t(vocab)) << "vocab " << vocab << ": row 2 is wholly forbidden";
    for (int t = 0; t < vocab; ++t) {
      EXPECT_EQ(got[size_t(vocab) + size_t(t)], logits[size_t(vocab) + size_t(t)]) << "unlisted row 1";
      if (t > 64) break;
    }
  }
}

TEST_F(CudaTokenBitmask, StridedRowsAndNoRows) {
  if (!gpu) GTEST_SKIP() << "no CUDA device";
  const int n = 3, vocab = 100, stride = 128, n_words = 4;
  std::vector<float> logits = random_normal(size_t(n) * stride, rng);
  std::vector<int32_t> words(size_t(n_words), 0x55555555), rows = {1};
  std::vector<float> ref = logits;
  std::vector<int32_t> c_words = words, c_rows = rows;
  Tensor cv = host_view(ref, {n, stride}).slice_cols(0, vocab);
  cpu.apply_token_bitmask(cv, host_index(c_words, {1, n_words}), host_index(c_rows, {1}));
  Tensor g = upload(logits, DType::f32, {n, stride});
  gpu->apply_token_bitmask(g.slice_cols(0, vocab), upload_index(words, {1, n_words}), upload_index(rows, {1}));
  const std::vector<float> got = download(g);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(got[i] == ref[i]) << i;
  // No rows: nothing launched, nothing changed.
  gpu->apply_token_bitmask(g.slice_cols(0, vocab), empty(DType::i32, {0, n_words}), empty(DType::i32, {0}));
  EXPECT_EQ(download(g), got);
}

}  // namespace
}  // namespace seam::test
