// The skinny-GEMM rule (skinny_gemm_choice.h) at the shapes it was measured on. Pure host
// code: runs without a GPU.
#include "backend/cuda/skinny_gemm_choice.h"

#include <gtest/gtest.h>

namespace seam {
namespace {

using cuda::choose_skinny_gemm;

constexpr int kNever = 0, kByRule = 1, kAlways = 2;

struct Shape {
  const char* name;
  int64_t n_out, n_in;
};

// Measured faster on the skinny GEMM at 2-8 rows.
constexpr Shape kFaster[] = {{"0.5B qkv", 1152, 896}, {"0.5B o", 896, 896}, {"0.5B down", 896, 4864},
                             {"1B qkv", 3072, 2048},  {"1B o", 2048, 2048}, {"1B down", 2048, 8192},
                             {"8B o", 4096, 4096}};
// Measured slower: every gate_up, the 8B qkv and down, the lm_heads.
constexpr Shape kSlower[] = {{"0.5B gate_up", 9728, 896},  {"1B gate_up", 16384, 2048}, {"8B gate_up", 28672, 4096},
                             {"8B qkv", 6144, 4096},       {"8B down", 4096, 14336},    {"8B lm_head", 128256, 4096},
                             {"0.5B lm_head", 151936, 896}};

TEST(SkinnyGemmChoice, ByRuleTakesTheMeasuredWinnersUpTo8Rows) {
  for (const Shape& s : kFaster)
    for (int64_t rows : {2, 4, 8}) EXPECT_TRUE(choose_skinny_gemm(kByRule, rows, s.n_out, s.n_in)) << s.name << rows;
  for (const Shape& s : kSlower)
    for (int64_t rows : {2, 4, 8}) EXPECT_FALSE(choose_skinny_gemm(kByRule, rows, s.n_out, s.n_in)) << s.name << rows;
  // From 9 rows cuBLASLt (1B qkv at 16: 7.0 against 6.5 us).
  for (const Shape& s : kFaster)
    for (int64_t rows : {9, 12, 16}) EXPECT_FALSE(choose_skinny_gemm(kByRule, rows, s.n_out, s.n_in)) << s.name << rows;
}

TEST(SkinnyGemmChoice, SwitchOverridesTheRule) {
  for (const Shape& s : kSlower) EXPECT_TRUE(choose_skinny_gemm(kAlways, 16, s.n_out, s.n_in)) << s.name;
  for (const Shape& s : kFaster) EXPECT_FALSE(choose_skinny_gemm(kNever, 2, s.n_out, s.n_in)) << s.name;
}

}  // namespace
}  // namespace seam
