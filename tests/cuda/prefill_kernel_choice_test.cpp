// The prefill-attention kernel rule (prefill_kernel_choice.h) at the lengths it was measured
// on. Pure host code: runs without a GPU.
#include <gtest/gtest.h>

#include "backend/cuda/prefill_kernel_choice.h"

namespace seam {
namespace {

using cuda::choose_prefill_kernel;
using cuda::PrefillKernel;

constexpr int kNever = 0, kByLength = 1, kAlways = 2;

TEST(PrefillKernelChoice, ByLengthTakesOneRoleWgmmaFrom1024Keys) {
  // Measured faster with the one-role wgmma kernel: 8B prefills of 4,096, 2,048 and 1,024 tokens.
  // Where it is the wgmma kernel that would run (SEAM_PREFILL_WS=0, or an FP8 cache), a 512-token
  // chunk (and the mixed step, whose decode rows see 513 keys) keeps mma.sync.
  for (int ws_mode : {0, 1}) {
    const bool ws_available = ws_mode == 0;  // ws_mode 0, or ws_mode 1 with the ws kernel unavailable
    for (int keys : {4096, 2048, 1024, 1 << 20})
      EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, ws_mode, ws_available), PrefillKernel::wgmma) << keys;
    for (int keys : {1, 16, 512, 513, 1023})
      EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, ws_mode, ws_available), PrefillKernel::mma_sync) << keys;
  }
}

TEST(PrefillKernelChoice, ByLengthTakesWarpSpecialisedFrom512Keys) {
  // Measured faster with the warp-specialised kernel: a 512-token prefill and a mixed step's chunk.
  for (int keys : {512, 513, 1023, 1024, 4096})
    EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, 1, true), PrefillKernel::wgmma_ws) << keys;
  for (int keys : {1, 16, 256, 511})
    EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, 1, true), PrefillKernel::mma_sync) << keys;
}

TEST(PrefillKernelChoice, SwitchOverridesTheLength) {
  for (int keys : {1, 512, 1024, 4096}) {
    EXPECT_EQ(choose_prefill_kernel(kNever, keys, true, 0, true), PrefillKernel::mma_sync) << keys;
    EXPECT_EQ(choose_prefill_kernel(kAlways, keys, true, 0, true), PrefillKernel::wgmma) << keys;
  }
}

TEST(PrefillKernelChoice, WithoutTheWgmmaKernelAlwaysMmaSync) {
  // Not built for sm_90a, not bf16/f16 d 128, or not a CC 9.0 GPU: whatever the switch says.
  for (int mode : {kNever, kByLength, kAlways})
    for (int keys : {1, 1024, 4096})
      EXPECT_EQ(choose_prefill_kernel(mode, keys, false, 1, false), PrefillKernel::mma_sync) << mode << " " << keys;
}

// Where wgmma is chosen, the warp-specialised form unless SEAM_PREFILL_WS=0 or it does not cover
// the call (an FP8 cache); never where wgmma itself is not chosen.
TEST(PrefillKernelChoice, WarpSpecialisedWhereWgmmaIsChosen) {
  for (int keys : {1024, 4096}) {
    EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, 1, true), PrefillKernel::wgmma_ws) << keys;
    EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, 0, true), PrefillKernel::wgmma) << keys;
    EXPECT_EQ(choose_prefill_kernel(kByLength, keys, true, 1, false), PrefillKernel::wgmma) << keys;
  }
  EXPECT_EQ(choose_prefill_kernel(kAlways, 16, true, 1, true), PrefillKernel::wgmma_ws);
  EXPECT_EQ(choose_prefill_kernel(kByLength, 511, true, 1, true), PrefillKernel::mma_sync);
  EXPECT_EQ(choose_prefill_kernel(kNever, 4096, true, 1, true), PrefillKernel::mma_sync);
}

}  // namespace
}  // namespace seam
