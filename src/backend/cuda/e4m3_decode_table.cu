#include "backend/cuda/e4m3_decode_table.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/kv_fp8.cuh"
#include "core/error.h"

namespace seam::cuda {

namespace {

// Thread i decodes the word of codes 4i .. 4i + 3 both ways.
template <typename T>
__global__ void e4m3_decode_table_kernel(uint16_t* out_cvt, uint16_t* out_bits) {
  pdl_begin();
  const uint32_t i = threadIdx.x, c0 = 4 * i;
  const uint32_t x = c0 | (c0 + 1) << 8 | (c0 + 2) << 16 | (c0 + 3) << 24;
  const uint32_t lo = e4m3x2_to<T>(x), hi = e4m3x2_to<T>(x >> 16);
  out_cvt[c0] = uint16_t(lo), out_cvt[c0 + 1] = uint16_t(lo >> 16);
  out_cvt[c0 + 2] = uint16_t(hi), out_cvt[c0 + 3] = uint16_t(hi >> 16);
  uint32_t p02, p13;
  e4m3x4_to_pairs<T>(x, p02, p13);
  out_bits[c0] = uint16_t(p02), out_bits[c0 + 2] = uint16_t(p02 >> 16);
  out_bits[c0 + 1] = uint16_t(p13), out_bits[c0 + 3] = uint16_t(p13 >> 16);
}

}  // namespace

void launch_e4m3_decode_table(uint16_t* out_cvt, uint16_t* out_bits, DType dtype, cudaStream_t stream) {
  SEAM_CHECK(dtype == DType::bf16 || dtype == DType::f16, "launch_e4m3_decode_table: bf16 or f16, not ",
             dtype_name(dtype));
  if (dtype == DType::bf16)
    launch_kernel(e4m3_decode_table_kernel<__nv_bfloat16>, 1, 64, 0, stream, out_cvt, out_bits);
  else
    launch_kernel(e4m3_decode_table_kernel<__half>, 1, 64, 0, stream, out_cvt, out_bits);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
