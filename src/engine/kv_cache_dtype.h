// --kv-cache-dtype (sglang/vLLM's flag): the element type of the KV pool. "auto" stores K/V in
// the activation dtype; "fp8_e4m3" (also "fp8") stores E4M3 codes, halving the bytes per
// token, so a memory-sized pool holds twice the tokens (KvPool::bytes_per_slot).
//
// The stored code is e4m3(k / k_scale), read back as code * k_scale (v alike), with per-layer
// per-tensor scales from the checkpoint (k_scale / v_scale: model/kv_cache_scales.h) or 1.0
// where it has none (KvScales, backend.h). Both backends store and read FP8 caches (CUDA:
// store_kv.cu / rope.cu encode, every attention kernel decodes: docs/architecture.md).
#pragma once
#include <string>

#include "core/tensor.h"

namespace seam {

// The pool dtype for `flag` with activations in `act` on `device` (any device: both backends
// take FP8 caches); throws seam::Error naming the flag and the accepted values.
DType resolve_kv_cache_dtype(const std::string& flag, DType act, Device device);

}  // namespace seam
