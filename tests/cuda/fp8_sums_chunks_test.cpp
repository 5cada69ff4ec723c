// How cuBLASLt's unscaled FP8 route splits a long product into row chunks under its float32
// sums scratch (Fp8CublasLt::chunk_rows). Pure host code: runs without a GPU.
#include "backend/cuda/fp8_cublaslt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace seam {
namespace {

using cuda::Fp8CublasLt;

// The most rows a chunk may hold: its sums within kMaxSumsBytes and at most the epilogue grid's
// 65,535 rows, a multiple of 16 (at least 16, whatever the width).
int64_t most_rows(int64_t n_out) {
  const int64_t fit = std::min<int64_t>(int64_t(Fp8CublasLt::kMaxSumsBytes / sizeof(float)) / n_out, 65535);
  return std::max<int64_t>(16, fit / 16 * 16);
}

TEST(Fp8SumsChunks, WholeProductWhereItFits) {
  EXPECT_EQ(Fp8CublasLt::chunk_rows(4096, 6144), 4096);  // Llama-3.1-8B qkv: 100 MB of sums
  EXPECT_EQ(Fp8CublasLt::chunk_rows(4096, 4096), 4096);
  EXPECT_EQ(Fp8CublasLt::chunk_rows(5, 28672), 5);
  EXPECT_EQ(Fp8CublasLt::chunk_rows(most_rows(28672), 28672), most_rows(28672));
}

TEST(Fp8SumsChunks, EqualChunksOnWholeTiles) {
  // Llama-3.1-8B gate_up at 4,096 rows: 470 MB of sums, 2,336 rows fit; 2 x 2,048, not 2,336 + 1,760.
  EXPECT_EQ(most_rows(28672), 2336);
  EXPECT_EQ(Fp8CublasLt::chunk_rows(4096, 28672), 2048);
  EXPECT_EQ(Fp8CublasLt::chunk_rows(8192, 28672), 2048);
  EXPECT_EQ(Fp8CublasLt::chunk_rows(3000, 28672), 1536);  // 1,536 + 1,464
}

TEST(Fp8SumsChunks, EveryChunkFitsAndNoChunkIsWasted) {
  for (int64_t n_out : {256, 4096, 28672, 36864, 131072, 1000000})
    for (int64_t n = 1; n <= 70000; n = n * 5 / 4 + 1) {
      const int64_t most = most_rows(n_out), c = Fp8CublasLt::chunk_rows(n, n_out);
      SCOPED_TRACE("n " + std::to_string(n) + " n_out " + std::to_string(n_out));
      ASSERT_GE(c, 1);
      if (n <= most) {
        EXPECT_EQ(c, n);
        continue;
      }
      EXPECT_LE(c, most);
      EXPECT_EQ(c % 16, 0);
      const int64_t fewest = (n + most - 1) / most;
      EXPECT_EQ((n + c - 1) / c, fewest) << "more chunks than the scratch forces";
      const int64_t even = (n + fewest - 1) / fewest;
      if (c % 128 != 0) EXPECT_GT((even + 127) / 128 * 128, most) << "whole tiles would have fitted";
    }
}

}  // namespace
}  // namespace seam
