// Writing an FP8 checkpoint of a float model folder in one of the formats seam loads
// (model/quant_config.h), as the publishers' tools lay them out: `seam quantize-fp8` and the
// tests use it to make FP8 versions of the tiny models. The decoder's linear weights
// (q/k/v/o/gate/up/down, Phi-3's fused qkv_proj / gate_up_proj as one tensor each, and a
// mixture-of-experts layer's experts and shared expert) become
// F8_E4M3 with their scales; everything else (embedding, norms, routers, lm_head, biases) is
// copied as it is, and the quantization is declared in config.json's quantization_config
// (ModelOpt: in hf_quant_config.json; compressed-tensors lists an MoE model's routers in its
// ignore list, as its recipes do).
//
// Weights are quantized as the loaders dequantize them: per-tensor / per-channel / 128x128
// block scale s = amax / 448 over the tensor / row / block (1 where amax is 0), code =
// e4m3(w / s) (round to nearest even, saturating).
#pragma once
#include <string>
#include <vector>

namespace seam {

enum class Fp8ExportFormat {
  ct_channel,        // compressed-tensors, channel weights, dynamic per-token activations ("FP8-dynamic")
  ct_tensor_static,  // compressed-tensors, tensor weights, static per-tensor input_scale
  ct_block,          // compressed-tensors, 128x128 block weights, dynamic 1x128 groups
  fp8_block,         // quant_method fp8, weight_block_size [128, 128], weight_scale_inv (Qwen3-FP8)
  fp8_tensor,        // quant_method fp8, per-tensor weight_scale, dynamic activations
  fbgemm,            // fbgemm_fp8: channel weights, dynamic per-token activations, activation_scale_ub
  modelopt,          // NVIDIA ModelOpt: hf_quant_config.json, per-tensor weight and input scales, kv scales
  modelopt_channel,  // ModelOpt FP8_PER_CHANNEL_PER_TOKEN: per-channel weight scales [out], dynamic per-token
  ct_w8a16,          // compressed-tensors, channel weights, input_activations null: weight-only FP8 (W8A16)
  modelopt_pb_wo,    // ModelOpt FP8_PB_WO: 128x128 block weight_scale, weight-only
};

struct Fp8ExportOptions {
  Fp8ExportFormat format = Fp8ExportFormat::ct_channel;
  // The static activation scale of the static formats (no calibration data here): the
  // activation amax it covers is 448 * input_scale.
  float input_scale = 8.f / 448.f;
};

// Every format with its name on the command line ("ct-channel", ...).
const std::vector<std::pair<std::string, Fp8ExportFormat>>& fp8_export_formats();

// Reads the float model folder `src_dir` (one model.safetensors) and writes its FP8 version
// into `dst_dir` (created; files there are overwritten), with the folder's other files
// (tokenizer, generation_config.json, ...) copied. Throws seam::Error.
void export_fp8_checkpoint(const std::string& src_dir, const std::string& dst_dir, const Fp8ExportOptions& options);

}  // namespace seam
