// FP8 weight-streaming GEMV for decode batches of 1..kFp8GemvMaxRows rows (backend.h "FP8
// linear"): one pass over the E4M3 weights in 16-byte loads, half the bytes of the bf16 GEMV
// (gemv.h). The activation quantization is fused into the kernel's prologue: each block
// quantizes the few rows of x itself (fp8_act.cuh, bit-exact with the CPU reference) into
// shared memory while its first weight loads are in flight, once (the blocks are persistent:
// at most one resident wave, each looping over row tiles), so a decode step runs no
// separate quantize kernel per linear; the RMSNorm before qkv / gate_up runs there too, and
// the gated activation after gate_up and RoPE + the KV store after qkv in its epilogue
// (Fp8GemvFusion): a decode layer is norm+qkv+RoPE/store, attention, o (+= residual),
// norm+gate_up+act, down (+= residual), as the bf16 GEMV's (gemv.h).
//
// Two kernels of one family (Fp8GemvKernel; the prologue and epilogue shared, fp8_gemv_common.cuh):
// - fma (fp8_gemv.cu): the weights widened to float on the CUDA cores, float32 FMAs. Every
//   product fp8(Xq) * fp8(Wq) is exact in float32, so the result differs from the CPU reference
//   only in the order of the float32 sums: per_tensor / per_channel scale the row's sum once,
//   (xs * ws) * S; block128 x dynamic_group128 add (xs(g) * ws(o, g)) * s for each 16-element
//   piece s of group g (the same sum regrouped). Twice the instructions per weight byte of the
//   bf16 GEMV (cvt + integer widening + 16 FMAs a row per 16 bytes): instruction-bound at ~15 %
//   of DRAM bandwidth (ncu, Llama-3.1-8B batch 1).
// - mma (fp8_gemv_mma.cu, the default on sm_89+): the products on the E4M3 tensor cores
//   (mma.sync m16n8k32, fp8_mma.cuh), x staged as its E4M3 codes; the same exact products, the
//   tensor core's partial sums of up to 128 k promoted into float32 (fp8_mma.cuh's precision
//   note): within the tests' tensor-core bound, bit-exact where every partial sum is exact.
// Beyond kFp8GemvMaxRows the caller uses cuBLASLt (fp8_cublaslt.h).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// The largest batch the GEMV serves (more rows: FMA-bound, see above).
constexpr int64_t kFp8GemvMaxRows = 4;
// x is staged in shared memory as float32 with its scales (rows * (in + groups) * 4 bytes) at
// most this large: rows of up to ~30k inputs at batch 1, 14,336 at batch 2 (Llama-3.1-8B's
// down_proj).
constexpr int64_t kFp8GemvMaxStagedBytes = 120 << 10;

// Which inner loop (SEAM_FP8_GEMV=mma|fma, read per backend: cuda_backend_impl.h).
enum class Fp8GemvKernel { fma = 0, mma = 1 };

// Work fused around the product (the default is none): each replaces a kernel of the decode step.
struct Fp8GemvFusion {
  // Defined: the product is taken with rms_norm(x) * norm_weight rounded to x's dtype, computed
  // in the prologue with rms_norm.cu's block-per-row arithmetic in its order (the same normed
  // rows as launch_rms_norm when its output is aligned like x), then quantized as ever.
  Tensor norm_weight;  // [in], x's dtype
  float eps = 0.f;
  // w is [gate | up] ([2 * inter, in]) and out [m, inter] = f(gate) * up, gate and up rounded to
  // x's dtype first, f silu or gelu_tanh: linear_fp8 then gated_act.cu, without the [gate | up]
  // round trip. No bias, no accumulate.
  bool glu = false;
  Activation glu_act = Activation::silu;
  // w is the qkv projection ([q | k | v] heads of head_dim = rope.k_cache.size(2)) and out its
  // [m, rows]: the epilogue rotates q and k with rope.cu's arithmetic on the rounded products and
  // stores the token's k and v at its slot (a cache in x's dtype, or E4M3 codes e4m3(x / scale)):
  // linear_fp8 then rope_store_kv bit for bit, one kernel instead of two. Bias allowed, no
  // accumulate, not with glu.
  bool rope_store = false;
  RopeStoreArgs rope;
};

// True when launch_fp8_gemv computes this linear_fp8 (arguments already op_checks-valid):
// 1 <= rows <= kFp8GemvMaxRows, in % 16 == 0, w 16-byte aligned, the staged x within
// kFp8GemvMaxStagedBytes, and the schemes paired as the formats pair them: per_tensor or
// per_channel weights with per-token or static activations, or block128 weights with
// dynamic_group128 activations.
bool fp8_gemv_applies(const Tensor& out, const Tensor& x, const Fp8Weight& w);
// ... and with the fusions of f (norm_weight [in] in x's dtype; GLU: even weight rows, out
// [m, rows / 2]; RoPE: caches [n_slots, n_kv_heads, d] contiguous in x's dtype or E4M3, w rows
// (n_heads + 2 n_kv_heads) d, out [m, rows] in x's dtype, 0 < rotary_dim <= d, positions and
// slots for every row).
bool fp8_gemv_fusion_applies(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Fp8GemvFusion& f);

// out [m, out] (=|+=) the FP8 product of x [m, in] (raw activations, f32/f16/bf16, rows may be
// strided) and w (+ bias). Requires fp8_gemv_applies. No allocation: graph-capturable. Both
// kernels take every case fp8_gemv_fusion_applies accepts; mma needs an sm_89+ device.
void launch_fp8_gemv(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                     cudaStream_t stream, const Fp8GemvFusion& f = {}, Fp8GemvKernel kernel = Fp8GemvKernel::fma);

}  // namespace seam::cuda
