// Attention on CUDA cores for any float dtype and head dim up to 512: the fp32 path,
// and the fallback where the tensor-core kernels do not apply.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/attention_params.h"
#include "core/dtype.h"

namespace seam::cuda {
constexpr int kGenericMaxHeadDim = 512;
// Attention of rows [token_begin, token_begin + n) of the batch, one block per (row, head).
// Each block finds its sequence by binary search over qo_indptr on the device.
void launch_attention_generic(const AttentionParams& p, DType dtype, int token_begin, int n, cudaStream_t stream);
}  // namespace seam::cuda
