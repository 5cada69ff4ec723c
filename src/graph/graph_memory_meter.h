// GraphMemoryMeter: device memory a runner's captures took, measured as free memory before
// and after. Start-up-only buffers that grow meanwhile (GEMM tuning's timing scratch,
// freed at end_startup) are not graph memory and are left out: a cold --gemm-autotune
// start-up otherwise reported 452 MiB of piecewise graph memory for 250 MiB of graphs.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace seam {

class GraphMemoryMeter {
 public:
  explicit GraphMemoryMeter(Backend& be)
      : be_(be), free_before_(be.free_memory()), scratch_before_(be.startup_scratch_bytes()) {}
  // Call after synchronize(): bytes taken since construction, less start-up scratch growth.
  int64_t bytes() const {
    const int64_t taken = int64_t(free_before_) - int64_t(be_.free_memory());
    return taken - (int64_t(be_.startup_scratch_bytes()) - int64_t(scratch_before_));
  }

 private:
  Backend& be_;
  size_t free_before_, scratch_before_;
};

}  // namespace seam
