// Hopper (sm_90a) wgmma flash attention for the extend (prefill) rows of a batch, head dim 128.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/attention_params.h"
#include "core/dtype.h"

namespace seam::cuda {
// True when the wgmma kernel was compiled (the build targets sm_90a), covers this dtype /
// head dim (bf16 or f16, d 128), and the current device is compute capability 9.0.
bool flash_prefill_wgmma_supported(DType dtype, int head_dim);
// Same contract and result as launch_flash_prefill's mma.sync kernel (attention_prefill.h).
void launch_flash_prefill_wgmma(const AttentionParams& p, DType dtype, cudaStream_t stream);
}  // namespace seam::cuda
