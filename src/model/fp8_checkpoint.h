// The FP8 part of Checkpoint::open: for a checkpoint whose ModelConfig::quant is a serialized
// FP8 format, every linear weight the format quantizes must be F8_E4M3 with its scales beside
// it ("<module>.weight_scale" or "weight_scale_inv", "<module>.input_scale" for static
// activations), of the shape the scheme needs and with finite positive values; every other
// tensor must not be F8_E4M3 (an ignored layer, a norm, the embedding, a bias). A
// mixture-of-experts layer's router, experts and shared expert may each be F8_E4M3 (with their
// scales, as a dense linear's) or float: publishers leave routers float. The KV cache's k/v
// scales ("...k_scale", "...v_scale") are collected for the FP8 KV cache.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/model_config.h"

namespace seam {

// The checkpoint's tensor index, as far as the FP8 loader needs it.
struct Fp8TensorSource {
  std::function<bool(const std::string&)> contains;
  std::function<HostTensor(const std::string&)> take;  // marks it used; no shape check
  std::function<std::vector<std::string>()> names;
};

// Fills ck.fp8_scales and ck.kv_scales; throws seam::Error naming the tensor and the problem.
void take_fp8_tensors(const ModelConfig& c, Checkpoint& ck, const Fp8TensorSource& src);

// The module of a weight tensor: "model.layers.0.mlp.down_proj.weight" -> "model.layers.0.mlp.down_proj".
std::string module_of(const std::string& weight_name);

// Whether the linear weight `weight_name` is FP8 under `q` (serialized: quantized and not
// ignored; lm_head only when the checkpoint stores it F8_E4M3, as vLLM never quantizes the head
// otherwise; online: every linear layer but lm_head).
bool fp8_linear_weight(const QuantConfig& q, const HostTensor& weight);

}  // namespace seam
