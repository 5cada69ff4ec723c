// Paged attention against the CPU reference: extend rows with cached prefixes, decode
// rows, mixed batches (prefill first, then decode), GQA groups 1/2/4/7, head dims
// 64/96/128/256 (tensor-core kernels) and 8 (CUDA-core kernel), f32/f16/bf16, q as a
// strided view inside qkv, KV slots scattered through a page table.
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
