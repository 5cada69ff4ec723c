#include "backend/cuda/skinny_gemm_choice.h"

namespace seam::cuda {

bool choose_skinny_gemm(int mode, int64_t rows, int64_t n_out, int64_t n_in) {
  if (mode == 0) return false;
  if (mode == 2) return true;
  return rows <= kSkinnyRuleMaxRows && n_out <= kSkinnyRuleMaxOut && n_out * n_in <= kSkinnyRuleMaxWeights;
}

}  // namespace seam::cuda
