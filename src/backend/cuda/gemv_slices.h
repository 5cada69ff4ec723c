// How many K slices the batch-1 GEMV (gemv.cu) splits each weight row into: a pure host-side
// rule over the grid's size and the kernel's occupancy, kept apart so that it is tested
// without a GPU (tests/cuda/gemv_slices_test.cpp).
#pragma once
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

}  // namespace seam::cuda
