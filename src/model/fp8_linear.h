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
Linear load_linear(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                   const std::vector<const HostTensor*>& bias_parts, WeightFormat dense, const QuantConfig& quant,
                   const Checkpoint& ck);

// 128x128 block scales stored expanded to rows ([n_out, n_kb], Fp8Weight::w_scale) compacted back
// to one row per 128-row block ([ceil(n_out / 128), n_kb], Fp8Weight::w_scale_blocks): empty
// when some 128-row block has rows whose scales differ (fused parts not aligned to 128 rows),
// where no 128x128-block GEMM can take them.
std::vector<float> compact_block_scales(const float* row_scales, int64_t n_out, int64_t n_kb);

// The per-channel online quantization of --quantization fp8 for one float32 matrix [n_out, n_in]:
// scale[o] = amax(row o) / 448 (1 for an all-zero row), codes[o][k] = e4m3(w[o][k] / scale[o]).
void quantize_fp8_per_channel(const float* w, int64_t n_out, int64_t n_in, uint8_t* codes, float* scales);

}  // namespace seam
