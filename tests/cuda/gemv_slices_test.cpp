// The batch-1 GEMV's K-slice rule (gemv_slices.h) on the shapes it was measured on. Pure host
// code: runs without a GPU. Resident warps come from the kernels' register counts on the H200
// (132 SMs, 8-warp blocks): <= 64 registers 4 blocks an SM, 72-74 three, 91-108 two.
#include <gtest/gtest.h>

#include <random>

#include "backend/cuda/gemv_slices.h"

namespace seam {
namespace {

using cuda::choose_gemv_slices;
using cuda::GemvSliceQuery;

constexpr int kSms = 132, kBlockWarps = 8;
constexpr int warps_at(int blocks_per_sm) { return blocks_per_sm * kBlockWarps * kSms; }

// Plain rows (52-60 registers at every slice count): 4 blocks an SM.
int plain(int) { return warps_at(4); }
// Pairs with 2 vectors per row per sweep: staged at one slice (58-63 registers, 4 blocks),
// inline norm above (72-74, 3 blocks).
int pair(int s) { return s == 1 ? warps_at(4) : warps_at(3); }

GemvSliceQuery row(int n_items, int n_in) { return {n_items, n_in / 8, 32 * 4, 8, false}; }
GemvSliceQuery normed_pair(int n_items, int n_in) { return {n_items, n_in / 8, 32 * 2, 8, true}; }

TEST(GemvSlices, PicksTheMeasuredFastestCountOnLlama8B) {
  EXPECT_EQ(choose_gemv_slices(row(4096, 4096), plain), 1);    // o_proj: 0.97 waves at 1
  EXPECT_EQ(choose_gemv_slices(row(6144, 4096), plain), 2);    // plain qkv: 1.45 waves at 1, 2.9 at 2
  EXPECT_EQ(choose_gemv_slices(row(4096, 14336), plain), 1);   // down
  EXPECT_EQ(choose_gemv_slices(row(128256, 4096), plain), 1);  // lm_head
  EXPECT_EQ(choose_gemv_slices(normed_pair(3072, 4096), pair), 1);   // qkv + RoPE: 0.73 waves, staged
  EXPECT_EQ(choose_gemv_slices(normed_pair(14336, 4096), pair), 1);  // gate_up + SiLU
}

TEST(GemvSlices, PicksTheMeasuredFastestCountOnSmallModels) {
  // Llama-3.2-1B: o and down fill a wave only at 2 slices (the old rule took 8 and 4).
  EXPECT_EQ(choose_gemv_slices(row(2048, 2048), plain), 2);
  EXPECT_EQ(choose_gemv_slices(row(2048, 8192), plain), 2);
  EXPECT_EQ(choose_gemv_slices(row(3072, 2048), plain), 1);  // 4 slices would be half a sweep
  EXPECT_EQ(choose_gemv_slices(normed_pair(1536, 2048), pair), 2);  // 0.36 waves: too few to stage
  EXPECT_EQ(choose_gemv_slices(normed_pair(8192, 2048), pair), 1);
  // Qwen2.5-0.5B: down fills 0.85 of a wave at 4; 896-wide rows hold less than one sweep.
  EXPECT_EQ(choose_gemv_slices(row(896, 4864), plain), 4);
  EXPECT_EQ(choose_gemv_slices(row(896, 896), plain), 1);
  EXPECT_EQ(choose_gemv_slices(normed_pair(576, 896), pair), 1);
  EXPECT_EQ(choose_gemv_slices(normed_pair(4864, 896), pair), 1);  // 1.15 waves, staged
}

TEST(GemvSlices, SmallGridsTakeTheFullestWavesAndTheCapHolds) {
  // 100 rows never fill a wave: the most slices whose slice still holds a sweep.
  EXPECT_EQ(choose_gemv_slices(row(100, 1024), plain), 1);
  EXPECT_EQ(choose_gemv_slices(row(100, 2048), plain), 2);
  EXPECT_EQ(choose_gemv_slices(row(100, 4096), plain), 4);
  EXPECT_EQ(choose_gemv_slices(row(100, 8192), plain), 8);
  GemvSliceQuery capped = row(100, 8192);
  capped.max_slices = 2;
  EXPECT_EQ(choose_gemv_slices(capped, plain), 2);
  capped.max_slices = 1;
  EXPECT_EQ(choose_gemv_slices(capped, plain), 1);
}

TEST(GemvSlices, NeverCutsASliceBelowOneSweepOrAboveTheCap) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> items(1, 200000), vecs(1, 4096), blocks(1, 8), cap_log(0, 3);
  for (int i = 0; i < 2000; ++i) {
    GemvSliceQuery q{items(rng), vecs(rng), 32 * (i % 2 ? 2 : 4), 1 << cap_log(rng), i % 3 == 0};
    const int b1 = blocks(rng), b2 = blocks(rng);
    const int s = choose_gemv_slices(q, [&](int sl) { return warps_at(sl == 1 ? b1 : b2); });
    SCOPED_TRACE("items " + std::to_string(q.n_items) + " vecs " + std::to_string(q.n_vec));
    EXPECT_TRUE(s == 1 || s == 2 || s == 4 || s == 8);
    EXPECT_LE(s, q.max_slices);
    if (s > 1) {
      EXPECT_GE(q.n_vec / s, q.sweep_vecs);
    }
  }
}

// Which plain projections stream two rows a warp: the rule against the H200 measurements it
// was fitted to (seam_kernel_bench --gemv, one row a warp -> two, us): faster on every 8B
// projection and on 1B's gate_up / down, slower on 1B's o_proj and all of Qwen2.5-0.5B's.
TEST(GemvSlices, PairsThePlainRowsOfLargeProjectionsOnly) {
  using cuda::gemv_pairs_plain_rows;
  constexpr size_t kBf16 = 2;
  EXPECT_TRUE(gemv_pairs_plain_rows(4096, 4096, kBf16));     // 8B o_proj 10.2 -> 9.0
  EXPECT_TRUE(gemv_pairs_plain_rows(6144, 4096, kBf16));     // 8B qkv 14.8 -> 14.0
  EXPECT_TRUE(gemv_pairs_plain_rows(4096, 14336, kBf16));    // 8B down 31.1 -> 27.2
  EXPECT_TRUE(gemv_pairs_plain_rows(28672, 4096, kBf16));    // 8B gate_up 56.5 -> 55.7
  EXPECT_TRUE(gemv_pairs_plain_rows(2048, 8192, kBf16));     // 1B down 10.0 -> 9.0
  EXPECT_TRUE(gemv_pairs_plain_rows(16384, 2048, kBf16));    // 1B gate_up 17.7 -> 16.6
  EXPECT_FALSE(gemv_pairs_plain_rows(2048, 2048, kBf16));    // 1B o_proj 3.4 -> 3.7
  EXPECT_FALSE(gemv_pairs_plain_rows(896, 896, kBf16));      // 0.5B o_proj 2.0 -> 2.5
  EXPECT_FALSE(gemv_pairs_plain_rows(1152, 896, kBf16));     // 0.5B qkv 2.2 -> 2.5
  EXPECT_FALSE(gemv_pairs_plain_rows(896, 4864, kBf16));     // 0.5B down 3.7 -> 4.0
  EXPECT_FALSE(gemv_pairs_plain_rows(9728, 896, kBf16));     // 0.5B gate_up 6.7 -> 6.9
  EXPECT_FALSE(gemv_pairs_plain_rows(4097, 4096, kBf16));    // odd rows cannot pair
  EXPECT_TRUE(gemv_pairs_plain_rows(4096, 2048, kBf16));     // exactly 16 MiB
  EXPECT_FALSE(gemv_pairs_plain_rows(4096, 2048, 1));        // 8 MiB: bytes count, not elements
}

}  // namespace
}  // namespace seam
