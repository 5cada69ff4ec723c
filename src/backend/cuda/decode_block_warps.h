// How many warps a flash-decode block has: a pure host-side rule, kept apart from
// attention_decode.cu so that it is tested without a GPU (tests/cuda/decode_block_warps_test.cpp).
#pragma once
#include <cstdint>

namespace seam::cuda {

// The block's warps take the keys of one split of one (decode sequence, kv head) in turn, each
// with its own cp.async ring, so a block's shared memory grows with its warps: at head dim 128 on
// a bf16 cache 4 warps hold 96 KB and only two blocks fit an SM, 2 warps 48 KB and four fit. The
// warps an SM runs are the same either way; what the narrow block changes is how many (sequence,
// kv head) pairs start at once. Where the wide layout needs two waves even without splitting
// (Llama-3.1-8B at 64 decode rows: 512 pairs against 264 resident blocks), the narrow one runs them
// in one wave of twice the keys a warp, and pays one block's fixed latency (the PDL wait, q, the
// ring's first round trip, the warps' merge, the store) once instead of twice.
constexpr int kDecodeWarpsWide = 4;
constexpr int kDecodeWarpsNarrow = 2;

// mode: SEAM_DECODE_BLOCK_WARPS (0: by this rule, the default — measured on an H100, 2026-12-06:
// decode attention at 64 rows of 192 keys 23.1 -> 20.6 us, FP8 8B batch 64 -1.4 %, bf16 -1.0 %,
// FP8 serving at 64 clients +0.8 %, docs/performance.md's thirty-fourth pass; 4: always wide;
// 2: always narrow). pairs: decode sequences x kv heads (the grid's blocks at one split);
// capacity_wide / capacity_narrow: resident blocks of each layout on the whole GPU (occupancy x
// SMs). The rule takes the narrow block only where it turns two or more waves of wide blocks
// into one: capacity_wide < pairs <= capacity_narrow. Elsewhere it keeps the wide one — with
// pairs past the narrow capacity too, the narrow block's longer chain of tiles would be waited
// for in more waves (600 pairs at 264 / 528: three wide waves of T against two narrow of 2T),
// and with pairs within one wide wave the wide block splits the keys over more warps.
// Never returns anything but 2 or 4.
int choose_decode_block_warps(int mode, int64_t pairs, int64_t capacity_wide, int64_t capacity_narrow);

}  // namespace seam::cuda
