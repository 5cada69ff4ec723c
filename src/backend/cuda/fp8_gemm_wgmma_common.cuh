// What the FP8 wgmma GEMMs share (fp8_gemm_wgmma.cu, fp8_gemm_wgmma_ws_kernel.cuh,
// fp8_gemm_skinny_wgmma.cu): the scale copy into shared memory and the epilogue's store of a pair
// of adjacent outputs. Included by those three files only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"

namespace seam::cuda::fp8_wgmma_detail {

// 4-byte global -> shared copy; when !valid the destination is zero-filled (src not read).
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(flash::smem_addr(dst)), "l"(src),
               "r"(valid ? 4 : 0));
}

// dst[0..1] as floats: one 4- or 8-byte load where `paired` (the pair's address is aligned).
template <typename T>
__device__ __forceinline__ float2 load_pair(const T* dst, bool paired) {
  if (paired) {
    if constexpr (std::is_same_v<T, float>) return *reinterpret_cast<const float2*>(dst);
    else {
      const uint32_t v = *reinterpret_cast<const uint32_t*>(dst);
      T e[2];
      __builtin_memcpy(e, &v, sizeof(v));
      return make_float2(to_float(e[0]), to_float(e[1]));
    }
  }
  return make_float2(to_float(dst[0]), to_float(dst[1]));
}

// out[0..1] (=|+=) y0, y1 rounded once to T (accumulate: to_float(out) + y, as fp8_gemm.cu); one
// 4- or 8-byte store where `paired` (the pair's address is aligned).
template <typename T>
__device__ __forceinline__ void store_pair(T* dst, float y0, float y1, bool accumulate, bool paired) {
  if (accumulate) {
    y0 = to_float(dst[0]) + y0;
    y1 = to_float(dst[1]) + y1;
  }
  if (paired) {
    if constexpr (std::is_same_v<T, float>)
      *reinterpret_cast<float2*>(dst) = make_float2(y0, y1);
    else
      *reinterpret_cast<uint32_t*>(dst) = flash::pack2<T>(y0, y1);
  } else {
    dst[0] = from_float<T>(y0);
    dst[1] = from_float<T>(y1);
  }
}

}  // namespace seam::cuda::fp8_wgmma_detail
