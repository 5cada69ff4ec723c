// Loading a linear layer in the format the checkpoint and the QuantConfig give it: dense, or
// FP8 (Linear::load_fp8). The model calls load_linear where it built a dense Linear; the
// runners and the rest of the model never see the difference.
#pragma once
#include <vector>

#include "model/checkpoint.h"
#include "model/linear.h"
#include "model/quant_config.h"

namespace seam {

// Fused parts (q/k/v, gate/up) are all FP8 or all dense (a config that quantizes some of them
// is refused: they share one GEMM). FP8 parts are combined into one layer as follows:
//   per-tensor scales become per-channel (exact: each row keeps its part's scale; the GPU's
//   tensor-core GEMM runs per-channel weights only); per-channel scales are concatenated;
//   128x128 block scales are expanded to rows (and kept compact where the parts align:
//   compact_block_scales);
//   static input scales take the parts' maximum (as vLLM; a larger scale never saturates
//   where a part's own would not).
//   A part that is a rows() view of a stored FP8 tensor (Phi-3's fused qkv_proj / gate_up_proj)
//   takes that tensor's scales at its rows. `folds` (empty, or one a part): load-time row factors
//   a serialized FP8 part takes on its scales (Linear::RowFold); float parts come folded.
// Weight-only FP8 (QuantConfig::weight_only) is not an FP8 layer: its parts are dequantized
// (model/fp8_dequant.h), folded as float values, and loaded dense.
Linear load_linear(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                   const std::vector<const HostTensor*>& bias_parts, WeightFormat dense, const QuantConfig& quant,
                   const Checkpoint& ck, const std::vector<Linear::RowFold>& folds = {});

// 128x128 block scales stored expanded to rows ([n_out, n_kb], Fp8Weight::w_scale) compacted back
// to one row per 128-row block ([ceil(n_out / 128), n_kb], Fp8Weight::w_scale_blocks): empty
// when some 128-row block has rows whose scales differ (fused parts not aligned to 128 rows),
// where no 128x128-block GEMM can take them.
std::vector<float> compact_block_scales(const float* row_scales, int64_t n_out, int64_t n_kb);

// The online quantization of --quantization fp8 (core/fp8.h's quantize_fp8_per_channel) of float
// `parts` (concatenated along dim 0) into codes [n_out, n_in] fp8_e4m3 and scales [n_out] f32 on
// the backend's device: at most `stage_elements` elements at a time are staged on the device in
// the part's own dtype (a random part is filled there, Backend::fill_random; a mapped part is
// copied as it is stored) and quantized by Backend::quantize_fp8_per_channel, so an 8B model
// costs no host pass over its values and no host copy of a matrix.
void quantize_parts_fp8(Backend& backend, const std::vector<const HostTensor*>& parts, Tensor codes, Tensor scales,
                        int64_t stage_elements = int64_t(1) << 24);

}  // namespace seam
