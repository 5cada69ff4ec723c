// Hopper (sm_90) bulk asynchronous copies from global to shared memory and the mbarriers that
// count their bytes: the copy engine (TMA) moves a contiguous run of bytes that one thread
// names, so a block keeps tens of kilobytes in flight with a handful of instructions. Bodies
// compile only for sm_90 and later; callers guard their kernels the same way.
//
// Protocol (PTX ISA, "mbarrier" and "cp.async.bulk"): a `full` barrier initialised with one
// arrival completes its phase once the producer has arrived (arrive_expect_tx, announcing the
// bytes) and every copy naming it has landed (complete_tx); consumers wait on its phase
// parity. An `empty` barrier with one arrival per consumer tells the producer that a slot's
// bytes have been read and may be overwritten.
#pragma once
#include <cstdint>

namespace seam::cuda::bulk {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SEAM_BULK_COPY_ENABLED 1
#endif

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
#endif
}

// After the barriers' initialisation, before any other thread or the copy engine uses them.
__device__ __forceinline__ void mbar_fence_init() {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#endif
}

// The producer's arrival, announcing `bytes` that copies will complete on this barrier.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

// Blocks until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
}

// An L2 policy for data read once (weights in a decode step): evicted first, so it does not
// push out what the step reads again (activations, the KV cache).
__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t policy = 0;
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global `src` to
// shared `dst`, completing them on `bar`.
__device__ __forceinline__ void copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar, uint64_t policy) {
#ifdef SEAM_BULK_COPY_ENABLED
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
#endif
}

// Waits at a barrier that only `threads` threads of the block (whole warps) take part in.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace seam::cuda::bulk
