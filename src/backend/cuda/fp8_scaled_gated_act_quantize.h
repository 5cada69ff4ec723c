// The FP8 gated MLP's middle after cuBLASLt's unscaled [gate | up] product (fp8_cublaslt.h,
// Fp8CublasLt::run_sums): from the float32 sums S [n, 2 inter] of the E4M3 products, gate and up
// as fp8_scale_epilogue.cu writes them (rounded to T: (xs[i] * ws(o)) * S[i][o]), act = f(gate) *
// up as gated_act.cu computes it (rounded to T), and act's per-token E4M3 codes and scales as
// fp8_gated_act_quantize.cu's row path makes them. Bit for bit the decomposition scale epilogue
// -> gated act + quantize, without writing [gate | up] in T and reading it back (at 4,096 x
// 14,336 that round trip is ~470 MB).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// Whether the kernel takes act [n, inter] (16-bit float, packed 16-byte-aligned rows, inter a
// multiple of 8 and at most 16,384: the sums of a row held in registers, 2 chunks of 8 a thread
// at most) for a per-tensor / per-channel weight w [2 inter, K] and the per-token dynamic scheme.
bool fp8_scaled_gated_act_quantize_applies(const Tensor& act, const Fp8Weight& w);

// sums: [n, 2 inter] float32 contiguous (16-byte aligned); xs: the n rows' activation scales
// (fp8_quantize.h, per token); codes [n, inter] E4M3 and scales [n] float32 of act (rows of one
// chunk: the caller offsets them); ub > 0 clamps the amax (Fp8Weight::act_amax_ub). write_act
// false leaves act unwritten (its codes and scales are the same: the caller's consumer reads only
// those; act's shape still sizes the launch). cluster (1, 2 or 4): where fewer rows than twice the SMs
// take the 1,024-thread row layout, that layout on a cluster of `cluster` CTAs (the same bits; sm_90).
int fp8_gated_cluster_default();  // SEAM_FP8_GATED_CLUSTER, 1 unless set
// Whether n rows of act [n, inter] take the decode layout (1,024 threads a row, one wave: fewer rows
// than twice the SMs, rows wider than 2 chunks of 256 threads), the only layout `cluster` changes.
bool fp8_scaled_gated_act_decode_layout(int64_t n, int64_t inter);
void launch_fp8_scaled_gated_act_quantize(const Tensor& act, uint8_t* codes, float* scales, const float* sums,
                                          const float* xs, const Fp8Weight& w, Activation f, float ub,
                                          cudaStream_t stream, bool write_act = true,
                                          int cluster = fp8_gated_cluster_default());

}  // namespace seam::cuda
