// store_kv: writes this step's K and V rows into the paged cache at their slots.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {
// k_cache[slots[i]] = k[i], v_cache[slots[i]] = v[i].   k, v [n, n_kv_heads, d] (rows may be strided),
// caches [n_slots, n_kv_heads, d] contiguous, slots [n] i32 (device). A slot outside [0, n_slots)
// is skipped: a device kernel cannot throw, and writing it would corrupt memory. FP8 E4M3
// caches take e4m3(k[i] / sc.k), e4m3(v[i] / sc.v) (kv_fp8.cuh); float caches ignore sc.
void launch_store_kv(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                     const Tensor& slots, cudaStream_t stream, KvScales sc = {});
}
