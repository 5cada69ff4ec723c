// --kv-cache-dtype (sglang/vLLM's flag): the element type of the KV pool. "auto" stores K/V in
// the activation dtype; "fp8_e4m3" (also "fp8") stores E4M3 codes, halving the bytes per
// token, so a memory-sized pool holds twice the tokens (KvPool::bytes_per_slot).
//
// The stored code is e4m3(k / k_scale), read back as code * k_scale (v alike), with per-tensor
// scales from the checkpoint (k_scale / v_scale) or 1.0 where it has none. Today the scale is
// 1.0: a checkpoint whose scales differ is refused with --kv-cache-dtype fp8_e4m3 rather than
// run with scales ignored. The CPU backend stores and reads FP8 caches; the CUDA attention
// kernels do not yet, so the flag is refused there.
#pragma once
#include <string>

#include "core/tensor.h"
#include "model/checkpoint.h"

namespace seam {

// The pool dtype for `flag` with activations in `act` on `device`; throws seam::Error naming
// the flag and the accepted values.
DType resolve_kv_cache_dtype(const std::string& flag, DType act, Device device);

// With an FP8 pool: every checkpoint k/v scale must be 1.0 (see above). No-op otherwise.
void check_kv_cache_scales(DType kv_dtype, const Checkpoint& ck);

}  // namespace seam
