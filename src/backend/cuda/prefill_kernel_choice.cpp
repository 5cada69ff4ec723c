#include "backend/cuda/prefill_kernel_choice.h"

namespace seam::cuda {

PrefillKernel choose_prefill_kernel(int mode, int longest_keys, bool wgmma_available) {
  const bool want_wgmma = mode == 2 || (mode == 1 && longest_keys >= kWgmmaMinKeys);
  return want_wgmma && wgmma_available ? PrefillKernel::wgmma : PrefillKernel::mma_sync;
}

}  // namespace seam::cuda
