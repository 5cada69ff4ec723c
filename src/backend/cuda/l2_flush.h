// l2_flush: reads a device buffer end to end so that the L2 holds only its lines.
// A timing harness calls it before each timed rep (gemm_timer.h): with a buffer of
// several L2 sizes, the timed kernel finds none of its operands in L2, as a GEMM
// streaming weights in the step loop does. Reading (not writing, as cudaMemset
// would) leaves the L2 clean, so the timed kernel pays no write-back of the flush.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace seam::cuda {
// buf: [bytes] device memory, 16-byte aligned. Its contents are unchanged (but see the .cu).
void launch_l2_flush(void* buf, size_t bytes, cudaStream_t stream);
}
