// Paged attention against the CPU reference: extend rows with cached prefixes, decode
// rows, mixed batches (prefill first, then decode), GQA groups 1/2/4/7, head dims
// 64/96/128/256 (tensor-core kernels) and 8 (CUDA-core kernel), f32/f16/bf16, q as a
// strided view inside qkv, KV slots scattered through a page table.
#include <cstdlib>

#include "backend/cuda/attention_decode.h"
#include "cuda_attention_fixture.h"

namespace seam::test {
namespace {

const Shape kShapes[] = {{8, 2, 64}, {32, 8, 128}, {14, 2, 64}, {4, 4, 128}, {8, 4, 8}, {4, 2, 96}, {8, 4, 256}};
const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

TEST_F(CudaAttention, ExtendWithCachedPrefixes) {
  const std::vector<Seq> seqs = {{50, 0}, {129, 37}, {1, 5}, {64, 64}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) check(t, sh, seqs, int(seqs.size()), true, "extend");
}

TEST_F(CudaAttention, DecodeRows) {
  const std::vector<Seq> seqs = {{1, 0}, {1, 16}, {1, 299}, {1, 999}, {1, 62}, {1, 4096}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) {
      check(t, sh, seqs, 0, true, "decode");
      check(t, sh, seqs, 0, false, "decode");  // as in a graph: max_seq_len unknown
    }
}

TEST_F(CudaAttention, MixedPrefillAndDecode) {
  const std::vector<Seq> seqs = {{40, 10}, {7, 0}, {1, 4}, {1, 899}, {1, 32}};
  for (DType t : kDtypes)
    for (const Shape& sh : kShapes) check(t, sh, seqs, 2, true, "mixed");
}

TEST_F(CudaAttention, LongContextDecodeUsesManySplits) {
  const std::vector<Seq> seqs = {{1, 32767}, {1, 20000}};
  for (DType t : {DType::bf16, DType::f16}) check(t, {32, 8, 128}, seqs, 0, false, "long decode");
}

TEST_F(CudaAttention, DecodeBatchesWhereTheRuleTakesNarrowBlocks) {
  // 64 decode rows of assorted lengths: 512 (row, kv head) pairs at 32/8 x 128 and 256 at 8/4 x 256. On a
  // 132-SM Hopper (H100 / H200) a 4-warp block (96 / 192 KB of rings) fits 2 / 1 an SM and a 2-warp
  // block 4 / 2, so decode_block_warps.h's rule takes 2 warps for both: its layout against the CPU,
  // eagerly with the lengths known and replayed in a graph without them.
  std::vector<Seq> seqs;
  for (int i = 0; i < 64; ++i) seqs.push_back({1, (i * 37) % 1500 + 1});
  int n_sms = 0, major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : {Shape{32, 8, 128}, Shape{8, 4, 256}}) {
      const int warps = cuda::flash_decode_block_warps(t, int(sh.d), false, 64, int(sh.kv_heads), n_sms);
      if (major == 9 && n_sms == 132 && std::getenv("SEAM_DECODE_BLOCK_WARPS") == nullptr)
        EXPECT_EQ(warps, 2) << "the rule's narrow layout at d " << sh.d;
      const std::string what = "64 decode rows on " + std::to_string(warps) + "-warp blocks";
      check(t, sh, seqs, 0, true, what);
      check(t, sh, seqs, 0, false, what, std::nullopt, 0, {}, true);
    }
}

TEST_F(CudaAttention, LongPrefillAgainstLongPrefix) {
  const std::vector<Seq> seqs = {{300, 1200}, {200, 0}};
  check(DType::bf16, {16, 4, 128}, seqs, 2, true, "long extend");
}

// q rows 4-byte but not 16-byte aligned (a view 4 elements into qkv): the tensor-core prefill
// kernels copy q rows with 16-byte cp.async, so the backend must take the generic kernel for
// the prefill rows (the decode kernel reads q in 4-byte pairs and still runs).
TEST_F(CudaAttention, QRowsNot16ByteAlignedUseTheGenericPrefill) {
  const std::vector<Seq> seqs = {{40, 9}, {1, 30}, {1, 200}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : {Shape{32, 8, 128}, Shape{8, 2, 64}})
      check(t, sh, seqs, 1, true, "q 8 bytes into qkv", std::nullopt, 4);
}

// Both prefill kernels (d = 128), each named explicitly, against the CPU reference; the
// tests above reach whichever kernel the backend's dispatch picks.
TEST_F(CudaAttention, PrefillMmaSyncKernelD128) {
  check_prefill_kernel_d128(cuda::PrefillKernel::mma_sync, "mma.sync prefill");
}

TEST_F(CudaAttention, PrefillWgmmaKernelD128) {
  if (!cuda::flash_prefill_wgmma_supported(DType::bf16, 128))
    GTEST_SKIP() << "the wgmma prefill kernel needs an sm_90a build (CMAKE_CUDA_ARCHITECTURES 90a) and a CC 9.0 GPU";
  check_prefill_kernel_d128(cuda::PrefillKernel::wgmma, "wgmma prefill");
}

TEST_F(CudaAttention, PrefillWarpSpecialisedKernelD128) {
  if (!cuda::flash_prefill_ws_supported(DType::bf16, 128, false))
    GTEST_SKIP() << "the warp-specialised prefill kernel needs an sm_90a build (CMAKE_CUDA_ARCHITECTURES 90a) and a "
                    "CC 9.0 GPU";
  check_prefill_kernel_d128(cuda::PrefillKernel::wgmma_ws, "ws prefill");
}

// The warp-specialised kernel computes the one-role kernel's arithmetic in the same order: equal
// outputs, bit for bit, over block shapes that end mid-tile, one-tile and many-tile key ranges,
// and (window, soft-cap) the options' instantiation.
TEST_F(CudaAttention, PrefillWarpSpecialisedEqualsOneRoleWgmma) {
  if (!cuda::flash_prefill_ws_supported(DType::bf16, 128, false))
    GTEST_SKIP() << "needs an sm_90a build and a CC 9.0 GPU";
  const std::vector<std::vector<Seq>> batches = {
      {{1000, 0}}, {{45, 200}, {1, 0}, {2, 130}, {3, 5}, {129, 0}, {70, 333}}, {{300, 1000}}, {{1, 0}}};
  AttentionOptions window;
  window.sliding_window = 200;
  AttentionOptions softcap;
  softcap.logit_softcap = 30.f;
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : {Shape{32, 8, 128}, Shape{4, 4, 128}})
      for (size_t i = 0; i < batches.size(); ++i) {
        const std::string name = "batch " + std::to_string(i);
        expect_prefill_kernels_equal(t, sh, batches[i], cuda::PrefillKernel::wgmma_ws, cuda::PrefillKernel::wgmma, {},
                                     name);
        expect_prefill_kernels_equal(t, sh, batches[i], cuda::PrefillKernel::wgmma_ws, cuda::PrefillKernel::wgmma,
                                     window, name + " window");
        expect_prefill_kernels_equal(t, sh, batches[i], cuda::PrefillKernel::wgmma_ws, cuda::PrefillKernel::wgmma,
                                     softcap, name + " softcap");
      }
}

}  // namespace
}  // namespace seam::test
