#include "backend/cuda/prefill_kernel_choice.h"

namespace seam::cuda {

PrefillKernel choose_prefill_kernel(int mode, int longest_keys, bool wgmma_available, int ws_mode,
                                    bool ws_available) {
  const bool want_wgmma = mode == 2 || (mode == 1 && longest_keys >= kWgmmaMinKeys);
  if (!want_wgmma || !wgmma_available) return PrefillKernel::mma_sync;
  return ws_mode == 1 && ws_available ? PrefillKernel::wgmma_ws : PrefillKernel::wgmma;
}

}  // namespace seam::cuda
