// CpuBackend: the float32 reference backend. Runs everywhere (CI, tiny models)
// and is the reference every CUDA op is tested against.
//
// Graphs: while capturing, each op is recorded as a closure holding its
// arguments by value (pointers, shapes, host scalars) instead of running;
// replay() runs the list. So a CPU graph behaves like a CUDA graph: shapes and
// addresses are baked, and per-step data must come through fixed buffers.
#pragma once
#include <chrono>
#include <functional>
#include <vector>

#include "backend/backend.h"

namespace seam {

class CpuBackend final : public Backend {
 public:
  // Reads SEAM_CPU_FAULT_AT_STEP (see fail_at_step).
  CpuBackend();
  Device device() const override { return Device::cpu; }
  std::string name() const override { return "cpu"; }

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  size_t free_memory() const override;
  void copy_h2d(void* dst, const void* src, size_t bytes) override;
  void copy_d2h(void* dst, const void* src, size_t bytes) override;
  void copy_d2d(void* dst, const void* src, size_t bytes) override;
  void fill(Tensor t, float value) override;
  void synchronize() override {}

  void embedding(Tensor out, Tensor ids, Tensor table) override;
  void rms_norm(Tensor out, Tensor x, Tensor weight, float eps) override;
  void linear(Tensor out, Tensor x, Tensor w, Tensor bias) override;
  void linear_accumulate(Tensor out, Tensor x, Tensor w, Tensor bias) override;
  void rope(Tensor q, Tensor k, Tensor positions, const RopeTables& t) override;
  void silu_mul(Tensor out, Tensor gate_up) override;
  void gated_act(Tensor out, Tensor gate_up, Activation a) override;
  void scale(Tensor x, float s) override;
  void softcap(Tensor x, float cap) override;
  void rms_norm_add(Tensor residual, Tensor x, Tensor weight, float eps) override;
  void store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots, KvScales s = {}) override;
  void attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                 const AttentionOptions& o) override;
  void gather_rows(Tensor out, Tensor x, Tensor idx) override;
  void scatter_i32(Tensor dst, Tensor pairs) override;
  void apply_penalties(Tensor logits, const PenaltyBatch& p) override;
  void sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) override;
  void apply_logit_bias(Tensor logits, const LogitBiasBatch& b) override;
  void logprobs(Tensor logits, const LogprobBatch& b) override;
  // FP8 linear, the reference of backend.h "FP8 linear" (fp8_cpu.cpp).
  bool supports_fp8() const override { return true; }
  void linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) override;
  // Tests: linear_fp8 rounds its activations to `mantissa_bits` (1..22; 7 = bfloat16) before
  // quantizing them, so a model's logits move by what one legitimate rounding change of the
  // activations moves them (the bound of tests/cuda/cuda_fp8_model_parity_test.cpp). 0 (the
  // default): off. Read when the op runs, so recorded graphs follow it.
  void set_fp8_act_round_bits(int mantissa_bits) { fp8_act_round_bits_ = mantissa_bits; }
  void apply_token_bitmask(Tensor logits, Tensor bitmask, Tensor rows) override;
  // mixture of experts: cpu_moe.cpp
  void moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize) override;
  void moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids, Tensor topk_weights,
                   const MoeScratch& scratch) override;
  void moe_shared_expert_add(Tensor out, Tensor y, Tensor gate) override;
  // tensor parallelism: the communicator's collectives as ops (cpu_collectives.cpp)
  void all_reduce_sum(Tensor x) override;
  void all_gather_cols(Tensor out, Tensor in, Tensor scratch) override;
  void embedding_shard(Tensor out, Tensor ids, Tensor table, int64_t vocab_begin) override;

  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;
  void replay(const Graph& g) override;
  bool capturing() const override { return capturing_; }

  // Ops run as they are called: the step timer is the host wall clock between the marks.
  void timer_begin() override;
  void timer_end() override;
  double timer_elapsed_ms() const override;

  // Ops recorded so far by the current capture (for tests).
  size_t n_recorded() const { return recording_.size(); }

  // Fault injection (tests). Steps are counted at timer_begin, which ModelRunner
  // marks once per forward, from 1. Fault::device: step n and every later one
  // throw DeviceError, as a sticky CUDA error would. Fault::internal: step n
  // alone throws InternalError (a broken invariant). n = 0: never. The
  // environment variable SEAM_CPU_FAULT_AT_STEP=n sets a device fault at
  // construction (for a whole `seam serve`).
  enum class Fault { device, internal };
  void fail_at_step(uint64_t n, Fault kind = Fault::device) {
    fault_at_step_ = n;
    fault_kind_ = kind;
  }
  uint64_t n_steps() const { return n_steps_; }

 private:
  // Runs `op` now, or records it while capturing.
  void launch(std::function<void()> op);

  bool capturing_ = false;
  int fp8_act_round_bits_ = 0;
  std::vector<std::function<void()>> recording_;
  std::chrono::steady_clock::time_point timer_start_, timer_stop_;
  bool timer_stopped_ = false;  // timer_end() followed the last timer_begin()
  uint64_t n_steps_ = 0;        // timer_begin() calls
  uint64_t fault_at_step_ = 0;
  Fault fault_kind_ = Fault::device;
};

}  // namespace seam
