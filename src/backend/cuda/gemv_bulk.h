// Batch-1 GEMV whose weights reach shared memory through bulk asynchronous copies (Hopper's
// copy engine), for the projections where the register-streaming GEMV (gemv.cu) loses its
// ramp and tail: gemv.cu picks it (gemv_bulk_choice.h) and passes the same arguments.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/gemv_args.h"

namespace seam::cuda {

// True when launch_gemv_bulk can run a launch of this shape: an sm_90 device, and the
// weight rows of one item (gemv_rows(epi) rows of n_in elements of `elem` bytes) fit one
// pipeline stage. head_dim: RoPE's, else unused.
bool gemv_bulk_fits(int epi, int n_items, int n_in, int head_dim, int elem);

// The GEMV of `a` (one row of x) with epilogue `epi`. Requires gemv_bulk_fits.
template <typename T, typename TO>
void launch_gemv_bulk(const GemvArgs<T, TO>& a, int epi, cudaStream_t stream);

}  // namespace seam::cuda
