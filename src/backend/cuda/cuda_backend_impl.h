// CudaBackend: the Backend on one GPU. Internal to backend/cuda (it names CUDA
// types); everything else reaches it through cuda_backend.h.
//
// Streams and copies: every op and copy is enqueued on one non-blocking compute
// stream, in call order. copy_d2h is asynchronous like the rest: the host may read
// the destination only after synchronize(). Copies from/to pageable host memory
// are legal but stage through the driver; pinned host memory (cudaHostAlloc) is
// the caller's business where it matters.
//
// Memory: alloc() is cudaMalloc (start-up only). The backend itself allocates,
// once, at construction: the cuBLASLt workspace (32 MiB) and the split-KV
// attention scratch (kAttentionScratchBytes). Nothing is allocated in the step loop.
//
// Graphs: begin_capture() starts stream capture (thread-local mode) on the compute
// stream; end_capture() instantiates a CUDA graph; replay() launches it on the stream.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cublaslt_gemm.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/gemv.h"

namespace seam::cuda {

// The FP8 linear's activation scratch (cuda_fp8_ops.cpp): grows outside capture, never shrinks.
struct Fp8Scratch {
  std::vector<void*> blocks;  // every allocation, freed with the backend (graphs may hold any)
  void* current = nullptr;
  size_t size = 0;
  ~Fp8Scratch();
  void* reserve(size_t bytes, bool capturing);
};

class CudaBackend final : public Backend {
 public:
  // Split-KV partials: ~32k (sequence, head, split) rows of d <= 128; the split count is
  // capped to fit (attention_decode.h).
  static constexpr size_t kAttentionScratchBytes = size_t(16) << 20;
  // Split-KV arrival counters, one per (decode sequence, kv head): the last split merges the
  // partials (attention_decode.h). Zeroed once here; every decode kernel leaves them zero.
  static constexpr int kAttentionCounters = 1 << 16;

  explicit CudaBackend(int device_id);
  ~CudaBackend() override;

  Device device() const override { return Device::cuda; }
  std::string name() const override;

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  size_t free_memory() const override;
  size_t startup_scratch_bytes() const override { return gemm_->tuning_scratch_bytes(); }
  void* alloc_host(size_t bytes) override;  // pinned (cudaMallocHost): async copies need no staging
  void release_host(void* p) override;
  void copy_h2d(void* dst, const void* src, size_t bytes) override;
  void copy_d2h(void* dst, const void* src, size_t bytes) override;
  void copy_d2d(void* dst, const void* src, size_t bytes) override;
  void fill(Tensor t, float value) override;
  void fill_random(Tensor t, const RandomFill& f) override;
  void synchronize() override;

  void embedding(Tensor out, Tensor ids, Tensor table) override;
  void rms_norm(Tensor out, Tensor x, Tensor weight, float eps) override;
  void linear(Tensor out, Tensor x, Tensor w, Tensor bias) override;
  void linear_accumulate(Tensor out, Tensor x, Tensor w, Tensor bias) override;
  void rms_norm_linear(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps, Tensor w,
                       Tensor bias) override;
  void rms_norm_qkv_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps, Tensor w_qkv,
                               Tensor b_qkv, const RopeStoreArgs& r) override;
  void rms_norm_gate_up_silu(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                             Tensor w_gate_up) override;
  void rms_norm_gate_up_act(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                            Tensor w_gate_up, Activation a) override;
  void rope(Tensor q, Tensor k, Tensor positions, const RopeTables& t) override;
  void silu_mul(Tensor out, Tensor gate_up) override;
  void gated_act(Tensor out, Tensor gate_up, Activation a) override;
  void scale(Tensor x, float s) override;
  void softcap(Tensor x, float cap) override;
  void rms_norm_add(Tensor residual, Tensor x, Tensor weight, float eps) override;
  void linear_rms_norm_add(Tensor residual, Tensor out, Tensor x, Tensor w, Tensor bias, Tensor norm_weight,
                           float eps) override;
  void store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots, KvScales s = {}) override;
  void rope_store_kv(Tensor q, Tensor k, Tensor v, Tensor positions, const RopeTables& t, Tensor k_cache,
                     Tensor v_cache, Tensor slots, KvScales s = {}) override;
  void qk_norm_rope_store(Tensor q, Tensor k, Tensor v, Tensor q_norm, Tensor k_norm, float eps, Tensor positions,
                          const RopeTables& t, Tensor k_cache, Tensor v_cache, Tensor slots,
                          KvScales s = {}) override;
  void attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                 const AttentionOptions& o) override;
  void gather_rows(Tensor out, Tensor x, Tensor idx) override;
  void scatter_i32(Tensor dst, Tensor pairs) override;
  void apply_penalties(Tensor logits, const PenaltyBatch& p) override;
  void sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) override;
  void apply_logit_bias(Tensor logits, const LogitBiasBatch& b) override;
  void logprobs(Tensor logits, const LogprobBatch& b) override;
  bool supports_fp8() const override { return true; }
  void quantize_fp8_per_channel(Tensor codes, Tensor scales, Tensor w) override;  // cuda_fp8_ops.cpp
  void linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) override;  // cuda_fp8_ops.cpp
  void linear_fp8_accumulate_before_norm(Tensor residual, Tensor x, const Fp8Weight& w, Tensor bias,
                                         Tensor norm_weight, float eps, const Fp8Weight& next) override;
  void rms_norm_linear_fp8(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps, const Fp8Weight& w,
                           Tensor bias) override;  // cuda_fp8_ops.cpp
  void rms_norm_gate_up_act_fp8(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                const Fp8Weight& w, Activation a,
                                const Fp8Weight* down = nullptr) override;  // cuda_fp8_ops.cpp
  void rms_norm_qkv_rope_store_fp8(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                   const Fp8Weight& w, Tensor bias, const RopeStoreArgs& r) override;  // cuda_fp8_ops.cpp
  void apply_token_bitmask(Tensor logits, Tensor bitmask, Tensor rows) override;
  // mixture of experts: cuda_backend_moe.cpp
  void moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize) override;
  void rms_norm_qkv_qk_norm_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps, Tensor w_qkv,
                                       Tensor b_qkv, Tensor q_norm, Tensor k_norm, const RopeStoreArgs& r) override;
  void moe_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor x, Tensor w_router,
                        bool renormalize) override;
  void moe_norm_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor normed, Tensor x,
                             Tensor norm_weight, float eps, Tensor w_router, bool renormalize) override;
  void moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids, Tensor topk_weights,
                   const MoeScratch& scratch) override;
  void moe_shared_expert_add(Tensor out, Tensor y, Tensor gate) override;
  // tensor parallelism: the NCCL communicator's calls on stream_ (cuda_collectives.cpp)
  void all_reduce_sum(Tensor x) override;
  void all_gather_cols(Tensor out, Tensor in, Tensor scratch) override;
  void embedding_shard(Tensor out, Tensor ids, Tensor table, int64_t vocab_begin) override;

  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;
  void replay(const Graph& g) override;
  bool capturing() const override { return capturing_; }
  void begin_gemm_tuning(const GemmTuning& t) override;  // cuda_backend.cpp
  void end_startup() override;
  void timer_begin() override;  // cudaEventRecord on the stream (cuda_backend.cpp)
  void timer_end() override;
  double timer_elapsed_ms() const override;
  void mark_forward() override;  // cudaEventRecord (cuda_backend.cpp)
  bool forward_done() override;  // cudaEventQuery: never blocks

  cudaStream_t stream() const { return stream_; }
  int device_id() const { return device_id_; }

 private:
  // rms_norm_gate_up_act_fp8's record of act's codes (fp8_pending_ below).
  struct Fp8PendingAct {
    const void* x = nullptr;
    int64_t n = 0, n_in = 0;
    Fp8ActScheme act = Fp8ActScheme::dynamic_per_token;
    float ub = 0.f;
    Tensor codes, scales;
    bool act_unwritten = false;  // act itself was not written (SEAM_FP8_ACT_SKIP): these codes must be taken
  };
  // linear_fp8_accumulate_before_norm's record of the activations it made (fp8_prenorm_ below).
  struct Fp8PreNorm {
    const void* x = nullptr;
    const void* g = nullptr;
    float eps = 0.f;
    int64_t n = 0, n_in = 0;
    Fp8ActScheme act = Fp8ActScheme::dynamic_per_token;
    float ub = 0.f;
    const void* input_scale = nullptr;  // static schemes: the scale tensor they were made with
    Tensor codes, scales;
  };
  // The batch-1..4 FP8 GEMV (fp8_gemv.h) on this backend's inner loop (SEAM_FP8_GEMV).
  void fp8_gemv(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                const Fp8GemvFusion& f = {}) {
    launch_fp8_gemv(out, x, w, bias, accumulate, stream_, f, fp8_gemv_kernel_);
  }
  // moe_router_route / moe_norm_router_route's one-row fusion (cuda_backend_moe.cpp): the router
  // GEMV f (plus its routing tail) launched when SEAM_MOE_FUSED_ROUTE and the GEMV take it.
  bool fused_route(GemvFusion f, Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor x,
                   Tensor w_router, bool renormalize);
  // linear_fp8's quantized activations in the FP8 scratch (codes [n, in], scales [n_groups, n]),
  // and the product from them: cuBLASLt where it takes the scheme, else the CUDA-core kernel
  // (cuda_fp8_ops.cpp).
  std::pair<Tensor, Tensor> fp8_act_buffers(Fp8Scratch& scratch, int64_t n, int64_t n_in, Fp8ActScheme act);
  void fp8_product(const Tensor& out, const Tensor& codes, const Tensor& scales, const Fp8Weight& w,
                   const Tensor& bias, bool accumulate);
  // rms_norm_gate_up_act_fp8 past the decode batches with the gated activation in the
  // warp-specialised GEMM's epilogue; false (nothing run) where that does not apply.
  bool gate_up_act_fp8_glu(const Tensor& act, const Tensor& gate_up, const Tensor& x, const Tensor& norm_weight,
                           float eps, const Fp8Weight& w, Activation a, const Fp8PreNorm& pre);
  // The same past the GEMV on cuBLASLt's unscaled product with the scales, the gated activation
  // and act's quantizer in one kernel after it (fp8_scaled_gated_act_quantize.h), under
  // SEAM_FP8_GATED_ROUTE=lt; false (nothing run) where it does not apply.
  // With down (the next linear_fp8 of act, Backend::rms_norm_gate_up_act_fp8) under
  // SEAM_FP8_ACT_SKIP=1 (the default) and down's activation scheme gate_up's, act is left unwritten: down
  // reads the codes this makes (fp8_pending_.act_unwritten).
  bool gate_up_act_fp8_lt(const Tensor& act, const Tensor& gate_up, const Tensor& x, const Tensor& norm_weight,
                          float eps, const Fp8Weight& w, Activation a, const Fp8Weight* down, const Fp8PreNorm& pre);
  // Clears fp8_pending_ (an FP8 op other than the linear_fp8 that takes it). Throws an internal
  // error if act was left unwritten for codes no op took: the caller broke
  // rms_norm_gate_up_act_fp8's contract, and a later read of act would see garbage.
  void drop_fp8_pending();
  // Whether x's FP8 codes are `pending`'s (taken from fp8_pending_ by the linear_fp8 of x, or by
  // linear_fp8_accumulate_before_norm): same x, shape and scheme. Throws an internal error where act
  // was left unwritten for codes this op does not take.
  static bool takes_pending(const Fp8PendingAct& pending, const Tensor& x, const Fp8Weight& w);
  // rms_norm_qkv_rope_store_fp8 past the GEMV on cuBLASLt's unscaled product with the scale
  // epilogue, RoPE and the KV store in one kernel after it (rope_from_fp8_sums.h,
  // launch_rope_store_kv_from_fp8_sums), under SEAM_FP8_QKV_ROPE_FUSED=1; false (nothing run) where
  // it does not apply.
  bool qkv_rope_store_fp8_lt(const Tensor& qkv, const Tensor& x, const Tensor& norm_weight, float eps,
                             const Fp8Weight& w, const Tensor& bias, const RopeStoreArgs& r, const Fp8PreNorm& pre);
  // Whether a norm-fused FP8 product of x's rows takes cuBLASLt's unscaled sums here: past the
  // GEMV, under a SEAM_FP8_GEMM mode that routes per-channel products to cuBLASLt (not wgmma or ws;
  // nor rows SEAM_FP8_SKINNY=on gives the skinny GEMM; the weight's own checks are the caller's),
  // with the norm's weight on this device.
  bool fp8_sums_route(const Tensor& x, const Tensor& norm_weight) const;
  int device_id_ = 0;
  int n_sms_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  bool capturing_ = false;
  std::unique_ptr<CublasLtGemm> gemm_;
  float* attention_scratch_ = nullptr;  // [kAttentionScratchBytes / 4]
  int* attention_counters_ = nullptr;   // [kAttentionCounters]
  // linear_rms_norm_add's fused GEMV (GemvFusion::post_norm): arrival counters, zeroed once at
  // construction; every launch leaves its counter zero. Launches take them in turn: on one stream
  // with every seam kernel waiting for its predecessor (pdl_begin) one would do, and the turn
  // keeps two fused launches apart even next to a kernel that did not wait.
  static constexpr int kPostNormCounters = 64;
  unsigned* post_norm_counters_ = nullptr;  // [kPostNormCounters]
  int next_post_norm_counter_ = 0;
  // moe_experts' folded combine (MoeTickets, moe_experts.h): a counter per (token, output tile) of
  // the down GEMV, zeroed once at construction; every launch leaves them zero. Two halves taken in
  // turn, as the post-norm counters, so two fused launches never share one.
  static constexpr int64_t kMoeTickets = 8192;  // a half: Mixtral's 4,096 rows at one tile a row
  unsigned* moe_tickets_ = nullptr;             // [2 * kMoeTickets]
  int next_moe_tickets_ = 0;
  // SEAM_DECODE_FUSED_POSTNORM (0 or 1, default 1), read at construction: 0 runs
  // linear_rms_norm_add as linear + rms_norm_add (an A/B switch; per backend, so a test can
  // build one of each in a process).
  bool fused_post_norm_ = true;
  // The three batch-1 fusions below are OFF by default: their GPU tests (cuda_moe_fusions_test,
  // cuda_qkv_qk_norm_fusion_test) pass on the H200, but each was measured slower end to end
  // (Qwen3-30B-A3B batch 1 2.885 ms off, 2.955 with the route fused, 3.127 with all three; Qwen3-8B
  // 4.140 vs 4.167 with the qk-norm tail: a fused kernel's last-block tail is the same chain of
  // dependent round trips as the kernel it replaces, whose launch PDL already hid;
  // docs/performance.md, eighteenth pass). Off, every op runs as the kernels it stands for.
  // SEAM_MOE_FUSED_ROUTE (0 or 1, default 0), read at construction: 1 runs moe_router_route at
  // one row as one kernel (the router GEMV's last block routes) and moe_norm_router_route as one
  // kernel (the norm in it too); 0 runs them as linear + moe_route and rms_norm + those (per
  // backend as fused_post_norm_).
  bool fused_moe_route_ = false;
  // SEAM_MOE_FUSED_COMBINE (0 or 1, default 0), read at construction: 1 hands moe_experts the
  // tickets (moe_tickets_ above), so one row's gathered_gemv path folds its combine into the down
  // GEMV; 0 keeps the moe_combine launch.
  bool fused_moe_combine_ = false;
  // SEAM_DECODE_FUSED_QK_NORM (0 or 1, default 0), read at construction: 1 runs
  // rms_norm_qkv_qk_norm_rope_store at one row as one GEMV with the q/k-norm tail; 0 as
  // rms_norm_linear + qk_norm_rope_store.
  bool fused_qk_norm_ = false;
  // Its per-head row counts (GemvFusion::qk_norm), zeroed once at construction, left zero by
  // every launch; two halves taken in turn, as the other counters.
  static constexpr int64_t kQkCounters = 1024;  // heads of a layer's q, k and v
  unsigned* qk_counters_ = nullptr;             // [2 * kQkCounters]
  int next_qk_counters_ = 0;
  // A MIXED batch's decode-row attention runs on side_stream_ between these two events
  // (attention()); created once at construction.
  cudaStream_t side_stream_ = nullptr;
  cudaEvent_t fork_event_ = nullptr, join_event_ = nullptr;
  // The step timer's two marks, created once at construction (never in the step loop).
  cudaEvent_t timer_start_ = nullptr, timer_stop_ = nullptr;
  bool timer_stopped_ = false;  // timer_end() followed the last timer_begin()
  Fp8Scratch fp8_scratch_;      // linear_fp8's quantized activations
  // rms_norm_gate_up_act_fp8's act already quantized (past GEMV batches) for the down projection:
  // the very next linear_fp8 call takes the codes if its x is this act under the same scheme,
  // and drops them either way (the model's MLP calls down_proj right after).
  Fp8PendingAct fp8_pending_;
  Fp8Scratch fp8_pending_scratch_;  // fp8_pending_'s codes and scales
  // linear_fp8_accumulate_before_norm's FP8 activations of the next norm fusion (past GEMV batches,
  // SEAM_FP8_NORM_EPILOGUE=1): codes / scales of rms_norm(x) * g under the next linear's scheme. The
  // next FP8 op takes them if it is that norm fusion of that x (pointer, rows, width, g, eps and
  // scheme equal: fp8_norm_codes) and drops them either way, as fp8_pending_.
  Fp8PreNorm fp8_prenorm_;
  Fp8Scratch fp8_prenorm_scratch_;  // fp8_prenorm_'s codes and scales
  // The FP8 activations of rms_norm(x) * g for w's product: fp8_prenorm_'s where `pre` (the record the
  // calling op took) is this norm's, else made now by the norm kernel (fp8_rms_norm_quantize.h) into
  // the FP8 scratch.
  std::pair<Tensor, Tensor> fp8_norm_codes(const Fp8PreNorm& pre, const Tensor& x, const Tensor& norm_weight,
                                           float eps, const Fp8Weight& w);
  // SEAM_FP8_NORM_EPILOGUE (1, the default, or 0), read at construction: 1 lets
  // linear_fp8_accumulate_before_norm run the product's scale epilogue, the next norm and its
  // quantization as one kernel on cuBLASLt's sums (bit-equal to the decomposition; 0 for A/B).
  // Measured on an H100 (docs/performance.md, thirty-third pass): FP8 8B batch 64 -0.8 % a step,
  // prefill of 4,096 +1.3 %, serving at 64 clients +1.7 %.
  bool fp8_norm_epilogue_ = true;
  // linear_fp8's cuBLASLt GEMMs (fp8_cublaslt.h), fast accumulation unless SEAM_FP8_ACCUM=promoted.
  Fp8CublasLt fp8_cublaslt_;
  // SEAM_FP8_GEMM, read at construction (per backend, so a test builds one of each): which
  // product past-GEMV FP8 linears take. ws-lt (the default): past kFp8WsMinRows rows, cuBLASLt's
  // E4M3 GEMM + the scale epilogue where cuBLASLt takes the weight (per-channel: with fast
  // accumulation ~1.1-1.3 PFLOP/s at 4,096 rows on the H200, faster than the warp-specialised
  // kernel's ~0.83-0.91 on every plain 8B projection), the warp-specialised wgmma GEMM
  // (fp8_gemm_wgmma_ws.h) for the rest (128-block weights) and for the gated product with its
  // activation in the epilogue (gate_up_act_fp8_glu; docs/performance.md, twenty-second pass); ws:
  // the warp-specialised GEMM for every product past kFp8WsMinRows rows wherever it applies (the
  // default before), else as auto; auto: cuBLASLt's E4M3 GEMM where it takes the scheme, the
  // one-block wgmma GEMM where it does not (128-blocks: no cuBLASLt mode on Hopper; per-tensor
  // weights, which only tests make), else the CUDA-core kernel; wgmma: the one-block wgmma GEMM
  // wherever it applies (~0.63 PFLOP/s: slower, kept for A/B); cublaslt: never a wgmma GEMM.
  enum class Fp8GemmMode { auto_route = 0, wgmma = 1, cublaslt = 2, ws = 3, ws_lt = 4 };
  bool fp8_ws_mode() const { return fp8_gemm_mode_ == Fp8GemmMode::ws || fp8_gemm_mode_ == Fp8GemmMode::ws_lt; }
  Fp8GemmMode fp8_gemm_mode_ = Fp8GemmMode::ws_lt;
  // SEAM_FP8_GATED_EPILOGUE (1, the default, or 0), read at construction: under ws / ws-lt, the gated MLP's
  // product past the decode batches with the activation in its epilogue (gate_up_act_fp8_glu);
  // 0 writes [gate | up] and runs the gated activation after it (bit-equal; an A/B switch).
  bool fp8_gated_epilogue_ = true;
  // SEAM_FP8_GATED_ROUTE (lt, the default, or ws), read at construction: lt runs the gated MLP's
  // product past the GEMV for per-channel weights and per-token activations on cuBLASLt
  // (gate_up_act_fp8_lt) under SEAM_FP8_GEMM=ws-lt, auto or cublaslt, before the warp-specialised
  // GEMM's gated epilogue is tried; ws (and SEAM_FP8_GEMM=ws or wgmma) keeps the older routes.
  // lt measured faster on the H200 (docs/performance.md, twenty-third pass).
  bool fp8_gated_lt_ = true;
  // SEAM_FP8_QKV_ROPE_FUSED (1, the default, or 0), read at construction: 1 runs the FP8 qkv
  // product's scale epilogue, RoPE and the KV store as one kernel on cuBLASLt's sums
  // (qkv_rope_store_fp8_lt) where that route applies; 0 the decomposition (bit-equal; an A/B switch).
  bool fp8_qkv_rope_fused_ = true;
  // SEAM_FP8_ACT_SKIP (1, the default, or 0), read at construction: 1 lets gate_up_act_fp8_lt leave
  // act unwritten when the caller names the down projection that takes its codes (act, bf16, is
  // 117 MB a 4,096-token layer of Llama-3.1-8B that nothing reads). Measured on the H200
  // (docs/performance.md, thirty-first pass): FP8 8B prefill of 4,096 +1.2 %, serving +0.6 %.
  bool fp8_act_skip_ = true;
  // SEAM_FP8_SKINNY (auto | on | off), read at construction with SEAM_FP8_GEMM, under
  // SEAM_FP8_GEMM=auto or ws (the explicit wgmma / cublaslt modes keep their products): which
  // products of kFp8GemvMaxRows + 1 .. kFp8SkinnyMaxRows rows the skinny swap-AB wgmma GEMM
  // (fp8_gemm_skinny_wgmma.h) takes where it applies. auto (the default): 128-block weights only,
  // whose other route is the one-block wgmma GEMM (the skinny one is 1.4-2.1x faster on the
  // Llama-3.1-8B projections at 64 rows on the H200); per-channel / per-tensor weights stay on
  // cuBLASLt, which measured faster than the skinny GEMM on every projection but gate_up
  // (2026-12-02: 8B decode batch 64 4.64 ms on cuBLASLt against 5.60 with every scheme skinny);
  // on: every scheme (A/B); off: never.
  enum class Fp8SkinnyMode { auto_block128 = 0, on = 1, off = 2 };
  Fp8SkinnyMode fp8_skinny_ = Fp8SkinnyMode::auto_block128;
  // The skinny GEMM's split-K workspace (tickets + float32 partials): Fp8Scratch's rule (grows
  // outside capture only, during the warm-ups before it; never released while the backend lives,
  // so a graph's baked pointer stays valid; a capture that needs more is an error). Every new block
  // has its tickets zeroed when allocated (stream-ordered before its first use); every launch
  // leaves them zero.
  Fp8Scratch fp8_skinny_scratch_;
  void* fp8_skinny_workspace(size_t bytes);
  // SEAM_FP8_GEMV, read at construction (per backend, as SEAM_FP8_GEMM): the inner loop of the
  // batch-1..4 FP8 GEMV (fp8_gemv.h). mma (the default where the device has E4M3 tensor cores,
  // compute capability 8.9+): the products on the tensor cores; fma: on the CUDA cores (the
  // kernel before issue 22's tensor-core loop, kept for A/B and older devices).
  Fp8GemvKernel fp8_gemv_kernel_ = Fp8GemvKernel::fma;
  // mark_forward()'s event (no timing), created once at construction.
  cudaEvent_t forward_mark_ = nullptr;
};

}  // namespace seam::cuda
