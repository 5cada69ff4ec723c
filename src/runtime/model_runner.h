// ModelRunner: runs one ForwardBatch and returns its StepResult. It owns the
// fixed step buffers and routes each batch (DESIGN.md "runtime"):
//   DECODE          -> the full decode graph of the smallest batch-size bucket >= n_seqs
//                      (a speculative verify row counts one row per token: scheduler.h)
//   EXTEND / MIXED  -> the piecewise graphs of the smallest token bucket >= n_tokens
//   anything else   -> eager, counted by reason
// Graphs are captured once at start-up (capture_graphs) and sealed after.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/graph_stats.h"
#include "kv/kv_pool.h"
#include "model/llama_model.h"
#include "runtime/forward_batch.h"
#include "runtime/step_buffers.h"
#include "runtime/step_result.h"
#include "runtime/step_timing.h"

namespace seam {

class DecodeGraphRunner;
class PiecewiseGraphRunner;

struct GraphConfig {
  bool disable_cuda_graph = false;            // no decode graphs (and no piecewise graphs)
  bool disable_piecewise_cuda_graph = false;  // no piecewise graphs
  std::vector<int> decode_buckets;            // batch sizes, ascending
  std::vector<int> piecewise_buckets;         // token counts, ascending
};

class ModelRunner {
 public:
  ModelRunner(Backend& backend, LlamaModel& model, KvPool& kv, const StepBufferSizes& sizes,
              const GraphConfig& graphs);
  ~ModelRunner();

  // Captures every configured graph, largest bucket first, then seals and tells the
  // backend start-up is over (Backend::end_startup: GEMM tuning stops).
  void capture_graphs();
  // Runs one step: applies the batch's page-table writes, runs the model and
  // samples; one SeqResult per sequence, in batch order.
  StepResult forward(const ForwardBatch& fb, StepReport* report = nullptr);
  // The same, for benchmarks and tests that want only the ids: sampled[i] is the
  // token drawn for sequence i.
  void forward(const ForwardBatch& fb, std::vector<int32_t>& sampled, StepReport* report = nullptr);
  // Runs the step eagerly whatever graphs exist (tests compare paths with it).
  void forward_eager(const ForwardBatch& fb, std::vector<int32_t>& sampled);
  // Host phases and device time of the last forward / forward_eager.
  const StepTiming& last_timing() const { return timing_; }
  // The float32 logits of the last step, [n_seqs, vocab] (tests).
  std::vector<float> last_logits(int n_seqs);

  // The step counters, and what the graph runners' caches captured (their refused
  // captures included, live).
  const GraphStats& graph_stats() const;
  StepBuffers& buffers() { return *buf_; }
  Backend& backend() { return backend_; }
  LlamaModel& model() { return model_; }
  KvPool& kv() { return kv_; }
  bool sealed() const { return sealed_; }

 private:
  using Clock = std::chrono::steady_clock;
  // ---- the graph runners' work: handed to them as closures by capture_graphs ----
  // Copies the batch into the step buffers, padded to n_tokens_padded rows and n_seqs_padded sequences.
  void upload(const ForwardBatch& fb, int n_tokens_padded, int n_seqs_padded);
  AttentionBatch attention_batch(int n_tokens, int n_seqs, int n_prefill_seqs, int n_prefill_tokens,
                                 int max_seq_len) const;
  // Pieces and attentions of the whole forward on n rows, eager.
  void run_layers_eager(int n, const AttentionBatch& attn);
  // upload() in two halves: the host mirror (and penalty staging), then the copies.
  void stage_inputs(const ForwardBatch& fb, int T, int S);
  void copy_inputs(const ForwardBatch& fb);
  // A timed step: stage, start the step timer, copy; ends the prepare phase.
  void start_step(const ForwardBatch& fb, int T, int S);
  void run_eager(const ForwardBatch& fb, std::vector<int32_t>& sampled);
  // The step's grammar masks (ForwardBatch::mask_rows / fill_mask) into the pinned mask
  // buffer, timed against the forward mark, and their h2d copy.
  void build_masks(const ForwardBatch& fb);
  // Penalties, sampling, the d2h of the ids, then the wait for them (ends launch and wait).
  void sample(const ForwardBatch& fb, std::vector<int32_t>& sampled);
  void note_eager(const std::string& reason, StepReport* report);
  // The step's prompt logprobs (ForwardBatch::prompt_lp_*), after its sample: logits of the
  // listed tokens from the final hidden states still in the residual buffer, max_seqs rows at
  // a time, eager (prompt rows are never in a decode graph).
  void prompt_logprobs(const ForwardBatch& fb, StepResult& r);
  // Milliseconds since the last phase boundary; moves the boundary to now.
  double lap_ms();

  Backend& backend_;
  LlamaModel& model_;
  KvPool& kv_;
  std::unique_ptr<StepBuffers> buf_;
  KvCacheView kv_view_;  // the model's view of kv_'s layers (fixed addresses)
  std::unique_ptr<DecodeGraphRunner> decode_graphs_;
  std::unique_ptr<PiecewiseGraphRunner> piecewise_graphs_;
  GraphConfig graph_config_;
  mutable GraphStats stats_;  // graph_stats() refreshes the caches' refused captures
  bool sealed_ = false;
  // Host staging of the penalty inputs (sized at start-up: no allocation in the loop).
  std::vector<float> h_freq_, h_pres_, h_rep_;
  StepTiming timing_;
  Clock::time_point lap_;  // the last phase boundary of the step in flight
};

}  // namespace seam
