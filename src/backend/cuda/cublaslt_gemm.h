// CublasLtGemm: out = x @ w^T (+ bias) through cuBLASLt, for `linear`.
//
// Capture-safe: the 32 MiB workspace is allocated once here and passed explicitly
// to every matmul, so nothing is allocated on the device in the step loop (a
// plan's first use creates host-side descriptors and queries the heuristic; both
// are host work and are legal during stream capture).
//
// Start-up tuning (off unless begin_tuning() is called): the heuristic's first result
// is not always the fastest kernel (Llama-3.1-8B gate_up at M=4096: 677 vs ~790
// TFLOP/s). Between begin_tuning() and end_tuning() -- the warm-up runs before graph
// capture -- a new bf16/f16 plan with >= min_rows rows times the heuristic's first
// n_candidates algorithms with GemmTimer (L2 flushed, median of reps) and keeps the
// fastest. Never while the stream is capturing; never after end_tuning() (the step
// loop only uses plans, it never times or allocates). Timing writes a scratch output,
// never the caller's `out`.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cublaslt_algo_space.h"
#include "backend/gemm_tuning_cache.h"
#include "backend/cuda/gemm_timer.h"
#include "core/tensor.h"

namespace seam::cuda {

class CublasLtGemm {
 public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // out [n, n_out] = x [n, n_in] @ w [n_out, n_in]^T (+ bias [n_out]).
  // x, w: f32, f16 or bf16 (one dtype); out: that dtype or f32 (logits); bias: w's or out's dtype.
  // bf16/f16 accumulate in fp32; f32 uses CUBLAS_COMPUTE_32F (no TF32).
  // Rows of x and out may be strided (unit column stride); w is contiguous.
  // accumulate: out += x @ w^T (+ bias) in place (beta = 1, C = D = out; the algorithm does not
  // depend on beta, so both modes share a plan).
  void run(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, cudaStream_t stream,
           bool accumulate = false);

  // ---- start-up tuning ----
  struct Tuning {
    int min_rows = 256;      // rows of x (M) from which a plan is tuned: compute-bound there
    int n_candidates = 8;    // heuristic results timed
    // Another algorithm replaces rank 0 only when it times this much faster, alone. Alone is
    // not in a step: steps run back-to-back GEMMs at the power limit, where time follows the
    // energy of the work done. With 2 % everywhere, the 8B plans at 4,096 rows kept kernels
    // 2-7 % faster alone, doing the same work, and the prefill step got 3 % slower. Off the
    // 128-row grid (min_gain_off_grid) the candidates differ in padded work -- a tile whose
    // token side divides 576 rows computes no padding -- and their gains carried into
    // steps (the 8B 576-row mixed step, 16.2 ms with 2 % against 16.7 ms with 10 %).
    // docs/performance.md, ninth pass.
    double min_gain = 0.10;
    double min_gain_off_grid = 0.02;
    GemmTimingMethod method;
    // Plans whose rows are not a multiple of kTileFitRows also time every tile of the
    // heuristic's first algorithm (cublaslt_algo_space.h: its stages, each fixed cluster shape,
    // no swizzle, custom option 0), briefly, and add the fastest tile_candidates of them to
    // the candidates. The heuristic tiles 576 rows as 4.5 tiles of 128; a tile whose token side
    // divides the rows (96x192, 128x144) was 6-25 % faster on the 8B projections
    // (docs/performance.md, eighth pass).
    bool tile_space = true;
    int tile_candidates = 3;
    // Results kept across runs (gemm_tuning_cache.h): a plan found there for this GPU, cuBLASLt
    // version and these settings is not timed, and what is timed is saved at end_tuning().
    // Empty: no cache.
    std::string cache_path;
  };
  static constexpr int64_t kTileFitRows = 128;
  struct TuningStats {
    int n_tuned = 0;          // plans whose candidates were timed
    int n_changed = 0;        // ... that kept another algorithm than the heuristic's first
    int n_skipped = 0;        // eligible plans left untuned (scratch allocation failed)
    int n_tile_searched = 0;  // plans whose heuristic algorithm's tiles were also timed
    int n_tile_kept = 0;      // ... that kept one of those tiles
    int n_cached = 0;         // eligible plans that took their algorithm from the cache, untimed
    int n_cache_stale = 0;    // ... cache entries cuBLASLt no longer accepts for their plan (re-tuned)
    bool cache_saved = false; // the cache file was written (or had nothing new)
    std::string cache_path;   // the cache file; empty without one
    double seconds = 0;       // host wall time spent timing
    double heuristic_us = 0;  // sum over tuned plans of the heuristic's first algorithm's median
    double chosen_us = 0;     // ... and of the kept algorithm's median
  };
  // `stream` must be the stream run() is called with. Allocates the timing scratch
  // (>= l2_flush_bytes()); start-up only.
  void begin_tuning(const Tuning& t, cudaStream_t stream);
  // Start-up is over: no plan is timed after this; frees the scratch. Idempotent.
  TuningStats end_tuning();
  bool tuning() const { return tuner_ != nullptr; }
  size_t tuning_scratch_bytes() const { return tuner_ ? tuner_->scratch_bytes : 0; }

  // For the sweep tool (needs begin_tuning): the heuristic's first n_max algorithms for this
  // call, with the plan's descriptors and preferences, each timed with `m`, in heuristic order.
  struct TimedAlgo {
    cublasLtMatmulAlgo_t algo{};
    size_t workspace_bytes = 0;
    double median_us = -1;  // negative: cuBLASLt refused to run it
  };
  std::vector<TimedAlgo> time_candidates(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                         int n_max, const GemmTimingMethod& m);
  // For the sweep tool (needs begin_tuning): every configuration of the algorithm space
  // (cublaslt_algo_space.h) for this call, each timed with `m`. `n_tried`: configurations checked.
  std::vector<TimedAlgo> time_algo_space(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                         const AlgoSpaceLimits& limits, const GemmTimingMethod& m, long* n_tried);
  // For the sweep tool (needs begin_tuning): these algorithms (from the two calls above, same call) timed again.
  std::vector<TimedAlgo> time_algos(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                    const std::vector<TimedAlgo>& algos, const GemmTimingMethod& m);
  // For tools: run() on this call's plan uses `algo` from now on (one from the calls above).
  void pin_algo(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                const cublasLtMatmulAlgo_t& algo);

 private:
  // Everything that selects a plan: sizes, leading dims, types, pointer alignments, bias mode.
  using Key = std::array<int64_t, 12>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool fused_bias = false;  // bias applied by the epilogue; else by a separate kernel
  };
  static Key key_of(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias);
  Plan& plan_for(const Key& key, const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias);
  // Start-up tuning of a new plan (tunes(x), not in the cache): adds the tiles of the heuristic's
  // algorithm off the 128-row grid, times the candidates, keeps the fastest past the guard in
  // p.algo, and records it in the stats and the cache.
  void tune_plan(const Key& key, Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                 std::vector<cublasLtMatmulHeuristicResult_t> cands);
  // The plan's descriptors plus up to n_candidates heuristic results (empty: no algorithm).
  Plan make_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool fuse_bias,
                 int n_candidates, std::vector<cublasLtMatmulHeuristicResult_t>* results);
  // make_plan with the epilogue bias when it applies, else without; throws when neither has an algorithm.
  Plan make_any_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, int n_candidates,
                     std::vector<cublasLtMatmulHeuristicResult_t>* results);
  static void destroy(Plan& p);
  // Whether a new plan for this call is timed now (tuning on, f16/bf16, enough rows, not capturing).
  bool tunes(const Tensor& x) const;
  // Medians of each candidate on this call (scratch output); empty when the scratch cannot hold out.
  std::vector<double> time_plan(const Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                                const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmTimingMethod& m);
  // time_plan, then destroys p (also when timing throws); throws when the scratch cannot hold
  // out (`what` names the caller). The tool-facing timing calls end here.
  std::vector<TimedAlgo> time_and_destroy(Plan p, const Tensor& out, const Tensor& x, const Tensor& w,
                                          const std::vector<cublasLtMatmulHeuristicResult_t>& cands,
                                          const GemmTimingMethod& m, const char* what);
  bool reserve_scratch(size_t bytes);  // grows the timing scratch; false when the device has no room
  // Appends to `cands` the fastest Tuning::tile_candidates tiles of cands[0]'s algorithm (brief
  // timing); returns how many it appended.
  int add_tile_candidates(const Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                          std::vector<cublasLtMatmulHeuristicResult_t>* cands);

  // Start-up tuning state: all null/empty outside [begin_tuning, end_tuning).
  struct Tuner {
    Tuning config;
    cudaStream_t stream = nullptr;
    void* scratch = nullptr;  // [scratch_bytes]: the flush buffer and the timed output
    size_t scratch_bytes = 0, flush_bytes = 0;
    std::unique_ptr<GemmTimer> timer;
    TuningStats stats;
    std::unique_ptr<GemmTuningCache> cache;  // null without Tuning::cache_path
  };
  // The cache's scope: what a kept algorithm depends on besides the plan's key.
  static std::string cache_scope(const Tuning& t);
  static std::string cache_key(const Key& key);
  // Takes the cached algorithm for `key` into `p` when there is one and cuBLASLt still accepts it.
  bool take_cached(const Key& key, Plan& p);
  std::unique_ptr<Tuner> tuner_;

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;  // [kWorkspaceBytes]
  std::map<Key, Plan> plans_;
};

}  // namespace seam::cuda
