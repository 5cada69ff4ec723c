// The flash-decode block-width rule (decode_block_warps.h). Pure host code: runs without a GPU.
#include <gtest/gtest.h>

#include "backend/cuda/decode_block_warps.h"

namespace seam {
namespace {

using cuda::choose_decode_block_warps;
constexpr int kByRule = 0, kWide = 4, kNarrow = 2;

TEST(DecodeBlockWarps, NamedLayoutsAreTakenAsTheyAre) {
  for (int64_t pairs : {1, 8, 264, 512, 600, 100000}) {
    EXPECT_EQ(choose_decode_block_warps(kWide, pairs, 264, 528), kWide) << pairs;
    EXPECT_EQ(choose_decode_block_warps(kNarrow, pairs, 264, 528), kNarrow) << pairs;
  }
}

TEST(DecodeBlockWarps, NarrowOnlyWhereItMakesOneWaveOfSeveral) {
  // Llama-3.1-8B heads on 132 SMs (bf16 cache, head dim 128): two wide blocks an SM, four narrow.
  const int64_t wide = 2 * 132, narrow = 4 * 132;
  // 64 decode rows x 8 kv heads: two wide waves, one narrow.
  EXPECT_EQ(choose_decode_block_warps(kByRule, 64 * 8, wide, narrow), kNarrow);
  EXPECT_EQ(choose_decode_block_warps(kByRule, wide + 1, wide, narrow), kNarrow);
  EXPECT_EQ(choose_decode_block_warps(kByRule, narrow, wide, narrow), kNarrow);
  // Within one wide wave (batch 1 to 33 rows): the wide block, its keys over more warps.
  for (int64_t pairs : {int64_t(1), int64_t(8), int64_t(256), wide})
    EXPECT_EQ(choose_decode_block_warps(kByRule, pairs, wide, narrow), kWide) << pairs;
  // Past one narrow wave: the narrow block would be waited for in as many waves or more.
  for (int64_t pairs : {narrow + 1, int64_t(600), int64_t(1024), int64_t(100000)})
    EXPECT_EQ(choose_decode_block_warps(kByRule, pairs, wide, narrow), kWide) << pairs;
}

TEST(DecodeBlockWarps, NoNarrowWindowWhenItHoldsNoMoreBlocks) {
  // A layout whose narrow block fits no more often than twice the wide one's per SM still
  // only chooses narrow strictly inside (wide, narrow]; equal capacities choose wide always.
  for (int64_t pairs : {int64_t(1), int64_t(264), int64_t(265), int64_t(1000)})
    EXPECT_EQ(choose_decode_block_warps(kByRule, pairs, 264, 264), kWide) << pairs;
}

}  // namespace
}  // namespace seam
