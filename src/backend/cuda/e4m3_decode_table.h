// Every E4M3 code decoded on the device by both of kv_fp8.cuh's decodes (e4m3x2_to, through the
// conversion unit, and e4m3x4_to_pairs, by bit arithmetic), so a test can hold the second to the
// first for all 256 codes: the attention tests alone would not see a wrong decode of the codes
// that random K / V rarely hit (subnormals, the largest exponents).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace seam::cuda {

// out_cvt[c], out_bits[c]: code c's value as a T bit pattern (T = dtype: bf16 or f16), 256 each,
// device memory.
void launch_e4m3_decode_table(uint16_t* out_cvt, uint16_t* out_bits, DType dtype, cudaStream_t stream);

}  // namespace seam::cuda
