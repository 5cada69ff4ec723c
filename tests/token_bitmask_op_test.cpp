// The apply_token_bitmask op of the CPU backend (the reference the CUDA kernel is checked
// against): only the listed rows change, exactly the tokens whose bit is clear become -inf,
// bits past the vocabulary are ignored, and malformed arguments throw naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace seam {
namespace {

TEST(TokenBitmaskOp, MasksExactlyTheClearBitsOfTheListedRows) {
  CpuBackend be;
  for (const int vocab : {1, 31, 32, 33, 1000}) {
    const int n = 5, n_words = (vocab + 31) / 32 + 1;  // one spare word: bits past vocab are ignored
    std::mt19937 rng{uint32_t(vocab)};
    std::vector<float> logits(size_t(n) * vocab);
    for (float& x : logits) x = float(int(rng() % 2001) - 1000) / 100.f;
    const std::vector<float> before = logits;
    std::vector<int32_t> rows = {3, 0, 4};  // any order; rows 1 and 2 are unconstrained
    std::vector<uint32_t> words(rows.size() * size_t(n_words));
    for (uint32_t& w : words) w = uint32_t(rng());
    words[0] = 0;                              // row 3: the first 32 tokens all forbidden
    words[size_t(n_words)] = 0xFFFFFFFFu;      // row 0: the first 32 tokens all allowed
    Tensor l(logits.data(), DType::f32, Device::cpu, {n, vocab});
    Tensor m(words.data(), DType::i32, Device::cpu, {int64_t(rows.size()), n_words});
    Tensor r(rows.data(), DType::i32, Device::cpu, {int64_t(rows.size())});
    be.apply_token_bitmask(l, m, r);
    for (int row = 0; row < n; ++row) {
      int k = -1;
      for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i] == row) k = int(i);
      for (int t = 0; t < vocab; ++t) {
        const size_t at = size_t(row) * vocab + size_t(t);
        const bool allowed = k < 0 || ((words[size_t(k) * n_words + size_t(t / 32)] >> (t % 32)) & 1u);
        if (allowed)
          EXPECT_EQ(logits[at], before[at]) << "vocab " << vocab << " row " << row << " token " << t;
        else
          EXPECT_EQ(logits[at], -std::numeric_limits<float>::infinity())
              << "vocab " << vocab << " row " << row << " token " << t;
      }
    }
  }
}

TEST(TokenBitmaskOp, BadArgumentsThrow) {
  CpuBackend be;
  std::vector<float> logits(2 * 40, 0.f);
  std::vector<uint32_t> words(4, 0);
  std::vector<int32_t> rows = {0, 1};
  Tensor l(logits.data(), DType::f32, Device::cpu, {2, 40});
  Tensor r(rows.data(), DType::i32, Device::cpu, {2});
  // One word cannot cover 40 tokens.
  EXPECT_THROW(be.apply_token_bitmask(l, Tensor(words.data(), DType::i32, Device::cpu, {2, 1}), r), Error);
  // More mask rows than logit rows.
  std::vector<uint32_t> three(6, 0);
  std::vector<int32_t> rows3 = {0, 1, 0};
  EXPECT_THROW(be.apply_token_bitmask(l, Tensor(three.data(), DType::i32, Device::cpu, {3, 2}),
                                      Tensor(rows3.data(), DType::i32, Device::cpu, {3})),
               Error);
  // A row outside the logits.
  std::vector<int32_t> far = {0, 2};
  EXPECT_THROW(be.apply_token_bitmask(l, Tensor(words.data(), DType::i32, Device::cpu, {2, 2}),
                                      Tensor(far.data(), DType::i32, Device::cpu, {2})),
               Error);
  // float words, too few row indices.
  EXPECT_THROW(be.apply_token_bitmask(l, Tensor(words.data(), DType::f32, Device::cpu, {2, 2}), r), Error);
  EXPECT_THROW(be.apply_token_bitmask(l, Tensor(words.data(), DType::i32, Device::cpu, {2, 2}),
                                      Tensor(rows.data(), DType::i32, Device::cpu, {1})),
               Error);
}

}  // namespace
}  // namespace seam
