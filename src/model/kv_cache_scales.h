// The per-layer scales of an FP8 KV cache (KvScales, backend.h) from a checkpoint's k/v scale
// tensors (Checkpoint::kv_scales, collected by model/fp8_checkpoint.cpp): compressed-tensors
// stores them on the attention module ("model.layers.3.self_attn.k_scale"), ModelOpt and the
// `fp8` method on the projections ("model.layers.3.self_attn.k_proj.k_scale"); vLLM's
// remapped form ("self_attn.attn.k_scale") is read as well. A layer without a scale gets 1.0
// (vLLM and sglang do the same). The scales apply only to an FP8 pool: a float cache stores
// k and v themselves.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint.h"

namespace seam {

// [n_layers] scales from Checkpoint::kv_scales (by tensor name); throws seam::Error naming the
// tensor for a name without a layer index in [0, n_layers), or for two tensors giving one
// layer's k (or v) scale.
std::vector<KvScales> kv_cache_scales(const std::map<std::string, HostTensor>& scales, int n_layers);

}  // namespace seam
