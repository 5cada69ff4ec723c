// Shared-memory mbarriers (sm_90, PTX ISA "Parallel Synchronization and Communication
// Instructions: mbarrier") for producer/consumer pipelines inside a block: a 64-bit barrier
// object in shared memory counts arrivals; when `count` arrivals of the current phase are in,
// the phase completes and the next begins (phases alternate parity 0, 1, 0, ...).
//
// Memory order: arrive has release and try_wait acquire semantics at CTA scope (the PTX
// defaults), so writes a thread made before its arrive are visible to a thread whose wait on
// that phase returned. Shared memory written through the generic proxy (st.shared, cp.async)
// and read by wgmma (async proxy) still needs fence.proxy.async (wgmma.cuh) between the two.
//
// Addresses are shared-window addresses (flash::smem_addr), 8-byte aligned.
#pragma once
#include <cstdint>

namespace seam::cuda::mbarrier {

// Once, by one thread, before any other thread uses the barrier (a __syncthreads after it).
__device__ __forceinline__ void init(uint32_t bar, uint32_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}

// One arrival on the current phase.
__device__ __forceinline__ void arrive(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
#endif
}

// Returns once the phase of parity `parity` has completed, i.e. the barrier's current phase has
// the other parity. The caller tracks phases: waiting on phase p (parity p & 1) is only correct
// while the barrier cannot have moved to phase p + 2 (the pipelines' protocols make sure of it).
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
#endif
}

}  // namespace seam::cuda::mbarrier
