// Weight-only FP8: an FP8 checkpoint's weight dequantized at load into the activation dtype.
//
//   W[o][k] = fp8(Wq[o][k]) * ws(o, k)
//
// the float32 product of the code's value and its scale (ws: backend.h's "FP8 linear" weight
// scales, per tensor / per channel / per 128x128 block), then rounded to the weight dtype as
// any float weight is. Activations are not quantized: the layer's products are those of a float
// layer holding these weights (vLLM's weight-only FP8, e.g. its Marlin path, computes the same
// products).
//
// Mixture-of-experts layers load their FP8 experts so (MoeLayer): every MoE kernel (the grouped
// GEMMs, the skinny and batch-1 paths, each captured in graphs) reads float experts. The cost
// is memory and bandwidth: the experts take the activation dtype's bytes on the device, twice
// their FP8 bytes (docs/architecture.md, "FP8").
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint.h"
#include "model/device_weight.h"

namespace seam {

// out [n_out * n_in] (row-major, in `dtype`: f32, f16 or bf16) = the dequantized values of codes
// [n_out, n_in] F8_E4M3 under `scheme` with the checkpoint's `scales` (whose shapes
// fp8_checkpoint.cpp has checked), each computed in float32 and then rounded to `dtype`. Rows
// run over the host's threads (core/parallel_rows.h: the sequential loop's values).
void dequantize_fp8_weight(const HostTensor& codes, const Fp8Scales& scales, Fp8WeightScheme scheme, DType dtype,
                           void* out);

// DeviceWeight::upload of `parts` concatenated along dim 0 in `dtype`, where a part with
// scales[i] != nullptr is F8_E4M3 and is dequantized first (a null entry: a float part,
// converted as DeviceWeight::upload does). Staged one part at a time.
DeviceWeight upload_fp8_dequantized(Backend& backend, const std::vector<const HostTensor*>& parts,
                                    const std::vector<const Fp8Scales*>& scales, Fp8WeightScheme scheme, DType dtype);

}  // namespace seam
