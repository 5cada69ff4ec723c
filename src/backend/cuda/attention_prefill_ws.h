// Hopper (sm_90a) warp-specialised flash attention for the extend (prefill) rows of a batch,
// head dim 128, a bf16/f16 KV cache (attention_prefill_ws.cu).
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/attention_params.h"
#include "core/dtype.h"

namespace seam::cuda {
// True when the kernel was compiled (the build targets sm_90a), covers this dtype / head dim /
// cache (bf16 or f16, d 128, not an FP8 cache), and the current device is compute capability 9.0.
bool flash_prefill_ws_supported(DType dtype, int head_dim, bool kv_fp8);
// Same contract and result as launch_flash_prefill_wgmma (attention_prefill_wgmma.h).
void launch_flash_prefill_ws(const AttentionParams& p, DType dtype, cudaStream_t stream);
}  // namespace seam::cuda
