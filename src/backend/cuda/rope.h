// Rotary embedding (HF rotate_half: pairs (i, i + d/2)) in place on q and k.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// q [n, n_heads, d], k [n, n_kv_heads, d] (packed heads, rows may be strided: views inside qkv),
// positions [n] i32 (device), inv_freq [d/2] f32 (device).
void launch_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                 cudaStream_t stream);
}
