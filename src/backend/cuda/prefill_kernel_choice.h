// Which kernel computes prefill attention at head dim 128: a pure host-side rule, kept apart
// from attention_prefill.cu so that it is tested without a GPU
// (tests/cuda/prefill_kernel_choice_test.cpp).
#pragma once

namespace seam::cuda {

// `automatic` resolves through choose_prefill_kernel; tests and the kernel bench name one.
enum class PrefillKernel { automatic, mma_sync, wgmma, wgmma_ws };

// Sequences with at least this many keys take the one-role wgmma kernel under the default rule.
// Measured on the H200 (8B heads; docs/performance.md, fifth and sixth passes): wgmma is 16 %
// faster on 4,096 causal keys in the kernel bench, and 8B prefill steps gain 3 % at 4,096 and
// 2,048 tokens and 6 % at 1,024. At 512 the kernel bench has wgmma 30 % faster (19.5 against
// 28.0 us), but in an interleaved A/B of whole steps (sixth pass) the mixed step with a
// 512-token chunk was 0.4-0.5 ms slower with it (17.63-17.75 against 17.14-17.28 ms; chunk
// alone 12.90-13.13 against 12.61-12.62), so chunks of 512 keep mma.sync.
constexpr int kWgmmaMinKeys = 1024;

// ... and from this many keys where the warp-specialised form is the one that would run.
// Measured on the H200 (docs/performance.md, twenty-first pass; SEAM_PREFILL_WGMMA=2 against 1,
// interleaved, two rounds): an 8B prefill of 512 tokens 11.83 / 12.24 against 13.24 / 12.57 ms,
// the 512-token chunk of a mixed step 12.74 / 13.02 against 13.16 / 13.51 ms, and the mixed step
// with 64 decode rows 17.52 / 18.21 against 17.64 / 18.01 ms (no change). Below 512 keys nothing
// was measured, so mma.sync stays there.
constexpr int kWgmmaWsMinKeys = 512;

// mode: SEAM_PREFILL_WGMMA (0 never wgmma, 1 by length (the default), 2 always);
// longest_keys: keys of the batch's longest sequence (its max_seq_len, or the prefill token
// count where that is unknown); wgmma_available: built for sm_90a, bf16/f16, d 128, a CC 9.0
// GPU. Where wgmma is chosen, ws_mode (SEAM_PREFILL_WS: 0 the one-role kernel, 1 the
// warp-specialised one, the default) picks between the two wgmma kernels; ws_available: the
// warp-specialised kernel covers the call (wgmma_available and a bf16/f16 cache, not FP8).
// Never returns `automatic`.
PrefillKernel choose_prefill_kernel(int mode, int longest_keys, bool wgmma_available, int ws_mode,
                                    bool ws_available);

}  // namespace seam::cuda
