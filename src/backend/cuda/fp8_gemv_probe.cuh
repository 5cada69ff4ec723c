// Phase timestamps of the tensor-core FP8 GEMV (fp8_gemv_mma.cu), compiled in only for
// bench/fp8_gemv_probe.cu (SEAM_FP8_GEMV_PROBE; the library's kernel has no probe). Thread 0
// of each block records %globaltimer and clock64 at the kernel's phase boundaries, so the
// probe can show where a launch's time goes that the CUPTI trace shows only as one span:
// the wait, the prologue's staging and codes, the first sweep's arrival, the stream, the
// epilogue. Included by fp8_gemv_mma.cu only (the arrays are that translation unit's).
#pragma once
#include <cstdint>
#include <vector>

namespace seam::cuda::fp8_gemv_detail {

enum Fp8GemvPhase {
  kProbeEntry = 0,       // the block starts (before its first weight loads)
  kProbeWaited,          // griddepcontrol.wait returned
  kProbeStaged,          // stage_x done (x normed / staged, scales computed)
  kProbeCoded,           // x's E4M3 codes written (the prologue's end)
  kProbeFirstSweep,      // warp 0's first sweep consumed: its first weight bytes arrived
  kProbeStreamed,        // the first tile's stream done by every warp (the reduction barrier)
  kProbeStored,          // the first tile's epilogue done (warp 0)
  kProbeExit,            // the block's last tile done
  kProbeTiles,           // not a time: the tiles the block computed
  kProbePhases
};
constexpr int kProbeBlocks = 1024;
// Launches recorded side by side: a launch writes row a.probe_slot (set by the host before it is
// launched or captured, fp8_gemv_probe_set_slot), so a graph of chained launches keeps each one's.
constexpr int kProbeSlots = 8;

#ifdef SEAM_FP8_GEMV_PROBE
__device__ unsigned long long g_probe_ns[kProbeSlots][kProbeBlocks][kProbePhases];
__device__ unsigned long long g_probe_clk[kProbeSlots][kProbeBlocks][kProbePhases];
// `dep`: a value the mark must wait for (the compiler keeps the timer read after it).
template <typename Args>
__device__ __forceinline__ void probe_mark(const Args& a, int phase, float dep = 0.f) {
  if (threadIdx.x != 0 || blockIdx.x >= kProbeBlocks) return;
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns) : "f"(dep) : "memory");
  g_probe_ns[a.probe_slot][blockIdx.x][phase] = ns;
  g_probe_clk[a.probe_slot][blockIdx.x][phase] = clock64();
}
// The block's exit mark and its tile count.
template <typename Args>
__device__ __forceinline__ void probe_finish(const Args& a, int tiles) {
  probe_mark(a, kProbeExit);
  if (threadIdx.x != 0 || blockIdx.x >= kProbeBlocks) return;
  g_probe_ns[a.probe_slot][blockIdx.x][kProbeTiles] = g_probe_clk[a.probe_slot][blockIdx.x][kProbeTiles] =
      unsigned(tiles);
}
// Host: copy the marks out ([slot][block][phase], as above), zero them, or choose the slot the
// next launches (or captures) write.
void fp8_gemv_probe_read(std::vector<unsigned long long>& ns, std::vector<unsigned long long>& clk);
void fp8_gemv_probe_clear();
void fp8_gemv_probe_set_slot(int slot);
int fp8_gemv_probe_slot();
#else
template <typename Args>
__device__ __forceinline__ void probe_mark(const Args&, int, float = 0.f) {}
template <typename Args>
__device__ __forceinline__ void probe_finish(const Args&, int) {}
#endif

}  // namespace seam::cuda::fp8_gemv_detail
