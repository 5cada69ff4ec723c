// Thread-block cluster primitives (sm_90): a CTA's rank in its cluster, another CTA's shared-memory
// address (for mbarrier::arrive_cluster), the cluster-wide barrier.
// A kernel launched without a cluster dimension runs each CTA as a cluster of one: rank 0, and
// every call below acts on the CTA itself. Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace seam::cuda::cluster {

__device__ __forceinline__ uint32_t cta_rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}

// The shared::cluster address of shared::cta address `addr` in the cluster's CTA `rank`.
__device__ __forceinline__ uint32_t map_shared(uint32_t addr, uint32_t rank) {
  uint32_t r = addr;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
#endif
  return r;
}

// A float in another CTA's shared memory: `addr` from map_shared (distributed shared memory).
__device__ __forceinline__ float load_shared_f32(uint32_t addr) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}

// Every thread of every CTA of the cluster: e.g. after the mbarrier inits, before any CTA
// signals another's barriers or writes its shared memory.
__device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

}  // namespace seam::cuda::cluster
