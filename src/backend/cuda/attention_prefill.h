// Tensor-core flash attention for the extend (prefill) rows of a batch.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/attention_params.h"
#include "backend/cuda/prefill_kernel_choice.h"
#include "core/dtype.h"

namespace seam::cuda {
// True when the kernel covers this dtype / head dim (bf16 or f16; d 64 or 128).
bool flash_prefill_supported(DType dtype, int head_dim);
// `kernel`: `automatic` takes the Hopper wgmma kernel (attention_prefill_wgmma.h) where it
// is available and the longest sequence has at least kWgmmaMinKeys keys (kWgmmaWsMinKeys where
// the warp-specialised form runs) (SEAM_PREFILL_WGMMA:
// 0 never, 2 always; prefill_kernel_choice.h) — its warp-specialised form
// (attention_prefill_ws.h) where that covers the call, unless SEAM_PREFILL_WS=0 — else the
// mma.sync kernel; tests and the kernel benchmark name one (wgmma and wgmma_ws throw where
// they are not available).
// Causal attention of the first n_prefill_seqs sequences (rows [0, n_prefill_tokens)).
// The grid depends only on host sizes (n_prefill_tokens, n_prefill_seqs, heads): per-sequence
// lengths are read on the device.
void launch_flash_prefill(const AttentionParams& p, DType dtype, cudaStream_t stream,
                          PrefillKernel kernel = PrefillKernel::automatic);
}  // namespace seam::cuda
