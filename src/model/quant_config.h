// QuantConfig: how a checkpoint's linear layers are quantized, read from config.json's
// `quantization_config` or from hf_quant_config.json (NVIDIA ModelOpt), or asked for at load
// with --quantization fp8. Every FP8 format seam loads maps onto one weight-scale scheme and
// one activation scheme of the backend's linear_fp8 (backend.h "FP8 linear"):
//
//   format (quant_method)                  weights (scale tensor)               activations
//   compressed-tensors, strategy tensor    per-tensor  (weight_scale [] / [1])  dynamic per-token | static input_scale
//   compressed-tensors, strategy channel   per-channel (weight_scale [out, 1])  dynamic per-token | static input_scale
//   compressed-tensors, strategy block     128x128     (weight_scale [ceil(out/128), ceil(in/128)])  dynamic 1x128 groups
//   compressed-tensors, no input_activations  any of the three above     none: weight-only (W8A16), below
//   modelopt, quant_algo FP8_PB_WO         128x128     (weight_scale, block shape)  none: weight-only
//   fp8 + weight_block_size [128, 128]     128x128     (weight_scale_inv, same shape)                dynamic 1x128 groups
//   fp8 (no block size)                    per-tensor  (weight_scale)           dynamic per-token | static input_scale
//   fbgemm_fp8                             per-channel (weight_scale [out, 1])  dynamic per-token, amax <= activation_scale_ub
//   modelopt, quant_algo FP8               per-tensor  (weight_scale)           static input_scale
//   --quantization fp8 (online)            per-channel, amax / 448 at load      dynamic per-token
//
// Weight-only FP8 (vLLM's W8A16 FP8: compressed-tensors with input_activations null; ModelOpt's
// FP8_PB_WO) has no activation quantization: its weights are dequantized at load into the activation dtype
// (model/fp8_dequant.h, as mixture-of-experts experts are) and run as float linears, so the
// layer's products are those of a float layer holding the dequantized weights.
//
// Anything else is refused at load with a message naming the file, the field and the value.
#pragma once
#include <string>
#include <vector>

#include "backend/backend.h"

namespace seam {

enum class QuantMethod : uint8_t { none, compressed_tensors, fp8, fbgemm_fp8, modelopt, online_fp8 };

const char* quant_method_name(QuantMethod m);

struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  Fp8WeightScheme weight = Fp8WeightScheme::per_tensor;
  Fp8ActScheme act = Fp8ActScheme::dynamic_per_token;
  float act_amax_ub = 0.f;  // fbgemm_fp8's activation_scale_ub; 0 = none
  // Weight-only FP8 (W8A16): `act` is unused, activations stay in their dtype, and the FP8
  // weights are dequantized at load (serialized() is still true: the codes are F8_E4M3).
  bool weight_only = false;
  // The scale tensor beside each quantized `<module>.weight`: "weight_scale" or
  // "weight_scale_inv" (fp8 block format; despite the name it multiplies, as in vLLM).
  std::string weight_scale_name = "weight_scale";
  // Modules left unquantized: exact names ("lm_head", "model.layers.0.mlp.down_proj"), or
  // "re:<regex>" (compressed-tensors) matched against the whole module name.
  std::vector<std::string> ignore;
  std::string source;  // "config.json" / "hf_quant_config.json" / "--quantization", for messages

  bool quantized() const { return method != QuantMethod::none; }
  // Weights are F8_E4M3 in the checkpoint (every format but online quantization).
  bool serialized() const { return quantized() && method != QuantMethod::online_fp8; }
  bool ignores(const std::string& module) const;
};

// Reads the quantization of the model folder `dir`: config.json's quantization_config, else
// hf_quant_config.json, else none. Throws seam::Error naming the file and the field for a
// format or variant seam does not support.
QuantConfig load_quant_config(const std::string& dir);

// Applies --quantization (sglang/vLLM's flag): "" or "none" keeps `q`; "fp8" quantizes a
// float checkpoint at load (refused for a checkpoint already quantized with another
// method; accepted and a no-op for a serialized FP8 one, as vLLM does), and runs a weight-only
// FP8 checkpoint's weights as FP8 layers with dynamic activations (per token; 1x128 groups for
// block weights) instead of dequantizing them.
void apply_quantization_flag(QuantConfig& q, const std::string& flag);

}  // namespace seam
