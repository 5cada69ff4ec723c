#include "backend/cuda/decode_block_warps.h"

namespace seam::cuda {

int choose_decode_block_warps(int mode, int64_t pairs, int64_t capacity_wide, int64_t capacity_narrow) {
  if (mode == kDecodeWarpsWide || mode == kDecodeWarpsNarrow) return mode;
  return pairs > capacity_wide && pairs <= capacity_narrow ? kDecodeWarpsNarrow : kDecodeWarpsWide;
}

}  // namespace seam::cuda
