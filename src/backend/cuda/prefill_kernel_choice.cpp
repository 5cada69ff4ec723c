#include "backend/cuda/prefill_kernel_choice.h"

namespace seam::cuda {

PrefillKernel choose_prefill_kernel(int mode, int longest_keys, bool wgmma_available, int ws_mode,
                                    bool ws_available) {
  if (mode == 0 || !wgmma_available) return PrefillKernel::mma_sync;
  const bool ws = ws_mode == 1 && ws_available;
  const int min_keys = ws ? kWgmmaWsMinKeys : kWgmmaMinKeys;
  if (mode == 1 && longest_keys < min_keys) return PrefillKernel::mma_sync;
  return ws ? PrefillKernel::wgmma_ws : PrefillKernel::wgmma;
}

}  // namespace seam::cuda
