// Hopper's tensor memory accelerator (TMA, sm_90): 2-D tiles of a row-major byte matrix copied
// from global into shared memory by one instruction, completion signalled on an mbarrier
// (mbarrier.cuh: arrive_expect_tx). The host encodes a tensor map (CUtensorMap, 128 bytes) with the
// driver's cuTensorMapEncodeTiled, reached through the runtime's cudaGetDriverEntryPointByVersion
// (no link against libcuda), and passes it to the kernel as a __grid_constant__ parameter: a
// launch captured into a graph keeps its own copy, so capture needs nothing else.
//
// The maps here: a [rows, cols] matrix of bytes (E4M3 codes), row pitch `pitch` bytes (a multiple
// of 16), box = box_rows x 128 bytes, 128-byte swizzle: in shared memory each row of the box is
// one 128-byte line and in every 1024-byte group of 8 lines chunk c of line r sits at chunk
// c ^ (r % 8) — exactly wgmma.cuh's SW128 K-major layout when the destination is 1024-aligned.
// Rows or columns past the matrix are zero-filled, and the transaction still counts the whole box.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace seam::cuda::tma {

// Box rows x 128 bytes of `map` at (column col, row row) into shared address dst (1024-aligned),
// complete_tx on mbarrier bar. The tensor map must live in param / const / global space
// (a __grid_constant__ kernel parameter).
__device__ __forceinline__ void load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int col, int row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(col), "r"(row)
      : "memory");
#endif
}

// load_2d into the same shared offset dst of every CTA of the cluster in cta_mask (bit r: rank r),
// complete_tx on the mbarrier at offset bar of each of them (each CTA expects the bytes itself).
__device__ __forceinline__ void load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int col, int row,
                                                  uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, "
      "%4}], [%2], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(col), "r"(row), "h"(cta_mask)
      : "memory");
#endif
}

// Brings the descriptor into the TMA unit's cache ahead of the first copy.
__device__ __forceinline__ void prefetch(const CUtensorMap* map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

// The driver's encoder, looked up once; null where the driver does not have it (older than 12.0).
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_fn() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess) (void)cudaGetLastError();  // a missing symbol is an answer, not a sticky error
    return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p)
                                                                : nullptr;
  }();
  return fn;
}

// The map of a [rows, cols] byte matrix at `base` (16-byte aligned, pitch % 16 == 0) with boxes of
// box_rows x 128 bytes, SW128 (see the top). L2 promotion 256 B: the boxes' rows are 128 B each,
// and the neighbouring K block of the same rows is the next copy.
inline CUtensorMap encode_u8_sw128(const void* base, uint64_t rows, uint64_t cols, uint64_t pitch, uint32_t box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 fn = encode_tiled_fn();
  SEAM_CHECK(fn != nullptr, "TMA: the driver has no cuTensorMapEncodeTiled");
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(pitch)};
  const cuuint32_t box[2] = {128, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = fn(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  SEAM_CHECK(r == CUDA_SUCCESS, "TMA: cuTensorMapEncodeTiled failed (", int(r), ") for a ", rows, " x ", cols,
             " byte matrix, pitch ", pitch);
  return map;
}

}  // namespace seam::cuda::tma
