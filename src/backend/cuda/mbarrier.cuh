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

// One arrival (release, cluster scope) on the barrier at shared::cluster address `addr` (a CTA of
// the cluster, this one included: cluster::map_shared's address): the arriving thread's earlier
// reads of the guarded data happen before it.
__device__ __forceinline__ void arrive_cluster(uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(addr) : "memory");
#endif
}

// After the inits, before the __syncthreads that publishes them: makes the initialised barriers
// visible to the async proxy (TMA's complete_tx), as CUTLASS's fence_barrier_init.
__device__ __forceinline__ void fence_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// One arrival on the current phase that also expects `bytes` more transaction bytes (a TMA copy
// signalling complete_tx on this barrier): the phase completes when every arrival is in and
// every expected byte has landed. Issue it before the copies it covers.
__device__ __forceinline__ void arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}

// An arrival, made asynchronously once every cp.async this thread issued before it has landed
// (.noinc: it counts against the barrier's expected arrivals, as an ordinary arrive). The copied
// data is then visible to threads whose wait on that phase returned.
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}

__device__ __forceinline__ bool try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
#endif
  return done != 0;
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
#endif
  return t;
}

// A pipeline wait that has not returned after this long is a protocol bug (a phase that never
// completes): the wait traps, so the launch fails with an error instead of hanging the stream.
constexpr uint64_t kWaitTimeoutNs = 10'000'000'000ull;

// Returns once the phase of parity `parity` has completed, i.e. the barrier's current phase has
// the other parity. The caller tracks phases: waiting on phase p (parity p & 1) is only correct
// while the barrier cannot have moved to phase p + 2 (the pipelines' protocols make sure of it).
// No message before the trap: printf is a call, and a call in a wgmma kernel makes ptxas
// serialise its wgmmas (C7510).
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  if (try_wait(bar, parity)) return;
  const uint64_t t0 = global_ns();
  while (!try_wait(bar, parity))
    if (global_ns() - t0 > kWaitTimeoutNs) __trap();
}

// wait() as one asm statement: the polling loop, and the trap after kWaitTimeoutNs, are PTX
// branches ptxas sees as one straight-line region. A wgmma kernel that waits with wgmma groups in
// flight needs this form: around wait()'s C++ loop ptxas serialises the wgmmas (C7518, "WG.DP in
// divergent path"), as CUTLASS's ClusterBarrier::wait avoids the same way.
__device__ __forceinline__ void wait_in_flight(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done, late;\n"
      ".reg .u64 t0, t;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra WAIT_DONE;\n"
      "mov.u64 t0, %%globaltimer;\n"
      "WAIT_LOOP:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra WAIT_DONE;\n"
      "mov.u64 t, %%globaltimer;\n"
      "sub.u64 t, t, t0;\n"
      "setp.gt.u64 late, t, %2;\n"
      "@late trap;\n"
      "bra WAIT_LOOP;\n"
      "WAIT_DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity), "l"(kWaitTimeoutNs)
      : "memory");
#endif
}

}  // namespace seam::cuda::mbarrier
