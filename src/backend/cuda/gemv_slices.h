// How the batch-1 GEMV (gemv.cu) divides a projection among warps: whether a warp streams one
// weight row or two, and how many K slices each row is split into. Pure host-side rules over the
// shape and the kernel's occupancy, kept apart so that they are tested without a GPU
// (tests/cuda/gemv_slices_test.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

namespace seam::cuda {

struct GemvSliceQuery {
  int n_items = 0;      // warps' items without slicing (rows; pairs for GLU / RoPE)
  int n_vec = 0;        // 16-byte vectors in one weight row (n_in / 8)
  int sweep_vecs = 0;   // vectors a warp loads in one sweep (32 lanes x the unroll)
  int max_slices = 8;   // 1, 2, 4 or 8
  bool staged_pair = false;  // at one slice the kernel is a pair that stages x * g in shared memory
};

// K slices per item (1, 2, 4 or 8). A warp streams its slice in sweeps, so a slice shorter than
// one sweep leaves lanes idle; and the grid runs in waves of the kernel's resident warps
// (`resident_warps(slices)`: its occupancy at that slice count times the SMs), so a last wave
// that is mostly empty leaves bandwidth unused while it drains. The fewest slices whose grid
// fills its waves (>= 0.8 of a wave, and of the last one) wins: fewer slices give each warp a
// longer stream. A staged pair keeps one slice once it fills half a wave. Where nothing fills
// (small layers), the slice count with the fullest waves.
int choose_gemv_slices(const GemvSliceQuery& q, const std::function<int(int slices)>& resident_warps);

// Whether a plain projection (no GLU / RoPE epilogue) of w [n_out, n_in] streams two rows a warp
// (rows j and n_out / 2 + j, two vectors per row per sweep) instead of one (four vectors). A pair
// loads each x vector once for two rows, halving x's traffic through L1, and keeps as many weight
// loads in flight per lane. Measured on the H200 (docs/performance.md, seventh pass) it is faster
// on every matrix of >= 16 MiB with n_in >= 2048 (8B o_proj 10.2 -> 9.0 us, down 31.1 -> 27.2,
// 1B down 10.0 -> 9.0) and slower on most smaller ones (1B o_proj 3.4 -> 3.7, every 0.5B
// projection, e.g. o_proj 2.0 -> 2.5), where halving the warps leaves too few to fill the GPU.
// 1B's 12 MiB qkv was faster paired (5.3 -> 4.9) but stays out: the decode step runs it as the
// RoPE pair, never plain. n_out must be even.
bool gemv_pairs_plain_rows(int64_t n_out, int64_t n_in, size_t elem_bytes);

}  // namespace seam::cuda
