// Which kernel computes prefill attention at head dim 128: a pure host-side rule, kept apart
// from attention_prefill.cu so that it is tested without a GPU
// (tests/cuda/prefill_kernel_choice_test.cpp).
#pragma once

namespace seam::cuda {

// `automatic` resolves through choose_prefill_kernel; tests and the kernel bench name one.
enum class PrefillKernel { automatic, mma_sync, wgmma };

// Sequences with at least this many keys take the wgmma kernel under the default rule.
// Measured on the H200 (8B heads; docs/performance.md, fifth and sixth passes): in the kernel
// bench wgmma takes 412 against 494 us on 4,096 causal keys, 40.5 against 63.5 on 1,024 and
// 19.5 against 28.0 on 512; 8B prefill steps gain 3 % at 4,096 and 2,048 tokens, 6 % at 1,024
// and 2.5 % at 512. (A fifth-pass comparison of the mixed bench's chunk-alone step, taken in
// different calls, had kept 512 on mma.sync; the sixth pass re-measured it interleaved.)
// Shorter sequences were not measured and keep mma.sync.
constexpr int kWgmmaMinKeys = 512;

// mode: SEAM_PREFILL_WGMMA (0 never wgmma, 1 by length (the default), 2 always);
// longest_keys: keys of the batch's longest sequence (its max_seq_len, or the prefill token
// count where that is unknown); wgmma_available: built for sm_90a, bf16/f16, d 128, a CC 9.0
// GPU. Never returns `automatic`.
PrefillKernel choose_prefill_kernel(int mode, int longest_keys, bool wgmma_available);

}  // namespace seam::cuda
