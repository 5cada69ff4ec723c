// GemmTimer: the device time of one cuBLASLt matmul algorithm, measured so that it
// predicts the step loop, for the sweep tool (bench/gemm_sweep.cu) and start-up
// tuning (CublasLtGemm). Why each rule (a one-shot min-of-2 on L2-warm inputs chose
// kernels 3-20 % slower in real steps):
//  - the L2 is flushed before every rep (l2_flush.h: a read of >= 4 L2 sizes), outside
//    the timed span: in a step, the weights of a layer are never L2-resident;
//  - CUDA events around the one matmul, no host work inside the span;
//  - n_warmup untimed reps first (clocks, lazy module loading), then the median of
//    n_reps (robust to one slow rep, unlike min or mean);
//  - candidates compared with one another are timed in interleaved rounds (medians_us):
//    back-to-back GEMMs run this H200 at its power limit, and its SM clock drifts over a
//    tuning burst, so timing one candidate after another let the clock, not the kernel,
//    decide. The same configuration of 8B down at 4,096 rows timed 584 and 689 us in two
//    sequential runs (docs/performance.md, ninth pass).
// Timing synchronizes the stream: start-up and tools only, never while capturing.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace seam::cuda {

// cublasLtMatmul's arguments minus the algorithm, with beta = 0 and C = D.
struct GemmCall {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  const void* a_data = nullptr;
  const void* b_data = nullptr;
  void* d_data = nullptr;  // written by every rep
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

enum class L2Flush { read, memset };

struct GemmTimingMethod {
  int n_warmup = 3;
  int n_reps = 15;
  L2Flush flush = L2Flush::read;
};

class GemmTimer {
 public:
  static constexpr int kMaxReps = 64;

  // flush: [flush_bytes] device scratch (flush_bytes from l2_flush_bytes()), owned by the caller.
  GemmTimer(cudaStream_t stream, void* flush, size_t flush_bytes);
  ~GemmTimer();
  GemmTimer(const GemmTimer&) = delete;
  GemmTimer& operator=(const GemmTimer&) = delete;

  // Median microseconds of `algo` on `call`; negative when cuBLASLt refuses to run it
  // (the error is cleared). Synchronizes the stream.
  double median_us(const GemmCall& call, const cublasLtMatmulAlgo_t& algo, const GemmTimingMethod& m);
  // The medians of several algorithms on `call`, timed in m.n_reps interleaved rounds (each
  // round times every algorithm once, in order, each after its own flush). Negative where
  // cuBLASLt refuses an algorithm. Synchronizes the stream once a round.
  std::vector<double> medians_us(const GemmCall& call, const std::vector<cublasLtMatmulAlgo_t>& algos,
                                 const GemmTimingMethod& m);

 private:
  void reserve_events(size_t n);  // at least n start/stop pairs
  cudaStream_t stream_;
  void* flush_;
  size_t flush_bytes_;
  std::vector<cudaEvent_t> start_, stop_;  // one pair per algorithm of a round
};

// Bytes a flush must touch to evict the current device's L2: max(256 MiB, 4 x L2 size).
size_t l2_flush_bytes();

}  // namespace seam::cuda
