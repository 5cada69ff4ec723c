// EngineCore: the engine behind the Engine face (engine/engine.h): the model,
// the KV pool, the scheduler and the runner, and the loop thread that steps
// them. Internal to engine/: nothing outside includes it but the benchmarking
// face's implementation.
//
// A device fault (DeviceError) is fatal: the loop fails every request it holds
// with ErrorKind::engine_dead, refuses every later submit, and never steps
// again (a CUDA error is sticky; stepping on would only fail again, or worse).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/engine_request.h"
#include "api/engine_stats.h"
#include "api/model_info.h"
#include "engine/draft_backoff.h"
#include "engine/engine_config.h"
#include "engine/engine_setup.h"
#include "engine/rank_parts.h"
#include "model/model_config.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace seam {

class Backend;
class Communicator;
class TcpStore;
class TpGroup;
struct RankPlan;
class LlamaModel;
class KvPool;
class ModelRunner;
class RadixCache;
class Scheduler;
class SlotAllocator;
struct StepResult;
struct ForwardBatch;
class StructuredOutput;
class DraftProposer;
struct SeqResult;
namespace grammar {
class CompiledGrammar;
class GrammarMatcher;
}  // namespace grammar

class EngineCore {
 public:
  explicit EngineCore(const EngineConfig& config);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  const ModelInfo& model_info() const { return model_info_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int max_context() const { return max_context_; }
  int kv_pool_tokens() const;
  const EngineConfig& config() const { return config_; }
  ModelRunner& runner() { return *runner_; }
  // A node other than 0: blocks until it stops following node 0; the error that stopped it,
  // or nullopt when node 0 closed the group (engine.h Engine::wait_follower).
  std::optional<std::string> wait_follower();
  // engine_bench_access.h: job on every local rank's runner at once (TP 1: on runner()).
  void on_every_rank(const std::function<void(ModelRunner&)>& job);

  std::vector<uint64_t> submit_group(std::vector<EngineRequest> group);
  void abort(uint64_t id);
  EngineStats stats() const;
  void wait_idle();
  std::optional<std::string> dead_cause() const;
  // Throws RequestError(invalid_request) naming the field when `r` can never be served.
  // A structured-output constraint is compiled here (on the caller's thread; cached by its
  // text): a compile error is invalid_request whose param is the constraint's field and whose
  // message is the compiler's reason. `compiled`, when given, receives the grammar.
  void validate(const EngineRequest& r, std::shared_ptr<const grammar::CompiledGrammar>* compiled = nullptr) const;

 private:
  struct Live {
    std::unique_ptr<Request> req;
    StreamCallback callback;
    // The request's place under --max-queued-requests, given back before its final
    // callback: a client that reads its answer and submits again must find it free.
    bool admission_released = false;
    // Structured output: the request's grammar state, fed every committed sampled token (a
    // retraction keeps the output and so the state: it is never reset or re-fed). Freed with
    // the request (finish, abort, failure).
    std::unique_ptr<grammar::GrammarMatcher> matcher;
    // Speculative decoding: the request's back-off after verify rows that accepted nothing
    // (kept across retractions: it describes the text, not the KV).
    DraftBackoff backoff;
  };
  void loop();
  // Nodes other than 0 (--node-rank > 0): step this node's ranks with node 0's batches until
  // node 0 stops; the outcome goes to follower_end_.
  void follower_loop();
  // Proposes, schedules, runs and commits one batch. False when there was nothing to run and
  // nothing changed (schedule() idle without a retraction): the loop then waits (loop()).
  bool step();
  void take_submissions();
  // Fails every live request with `kind` and `message`; with engine_dead, also
  // marks the engine dead (under mu_) so that submit refuses from then on.
  void fail_all(ErrorKind kind, const std::string& message);
  // Commits a step from its result; t_scheduled stamps first admissions.
  void process_outputs(const StepResult& result, Clock::time_point t_scheduled);
  // Commits the row whose first result is result.seqs[i] (speculative_commit.cpp): its
  // sampled token, or a verify row's accepted run and its KV; a finished request's id goes
  // to `done`.
  void commit_row(const StepResult& result, size_t i, std::vector<uint64_t>& done);
  bool check_stop(Request& r, int32_t token);
  // Speculative decoding: fills the draft_ids of the running requests that may speculate
  // this step (none while more than --speculative-max-batch-size decode).
  void propose_drafts();
  bool may_speculate(const Live& l) const;
  // Takes one sampled token into r: stop ids, grammar, detokenizer, stop strings, length.
  // False when the request failed (its final callback has run; it is gone from live_).
  bool take_token(Request& r, grammar::GrammarMatcher* m, const SeqResult& q, std::vector<int32_t>& new_ids,
                  std::vector<TokenLogprob>& new_logprobs);
  void emit(Request& r, std::vector<int32_t> new_ids, bool finished, std::vector<TokenLogprob> new_logprobs = {});
  // Output overlap (the default; --disable-output-overlap): emit() queues each output with its callback, and the queue is
  // handed over (in order) while the device runs the next step (ForwardBatch::
  // while_device_runs), or before anything else reaches a callback, or when no step follows.
  // Off: emit() calls the callback at once. With speculative decoding's STANDALONE drafts, the
  // draft model's steps run first, so the queue waits for them too.
  void deliver(Live& l, RequestOutput out);
  void flush_outputs();
  // flush_outputs where no step follows (idle, a failure, stopping): the outputs are the last
  // step's, so their handoff time is added to the step wall time as well, and the per-step
  // phases keep adding up to it.
  void flush_outputs_after_step();
  void finish_request(uint64_t id);
  // Fails one live request with `kind` / `message` (its final callback) and frees it.
  void fail_request(uint64_t id, ErrorKind kind, const std::string& message);
  // Structured output: lists the step's constrained rows and hands the runner fill_mask.
  void prepare_masks(ForwardBatch& fb);

  void release_admission(Live& l);
  void publish_stats();  // engine_stats_snapshot.cpp

  EngineConfig config_;
  ModelConfig model_config_;
  ModelInfo model_info_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<RankPlan> rank_plan_;    // what every rank builds (TP workers read it while they live)
  std::unique_ptr<TcpStore> tp_store_;     // TP only: rank 0's connection to the group's store
  std::unique_ptr<Communicator> tp_comm_;  // TP only: rank 0's collectives (backend_ holds a pointer)
  std::unique_ptr<TpGroup> tp_;            // TP only: this node's other ranks, on worker threads
  std::vector<RankParts::Memory> group_memory_;  // every rank's memory after start-up (stats)
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<SlotAllocator> slots_;
  std::unique_ptr<RadixCache> cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<StructuredOutput> structured_;  // compile() is thread-safe: submitters call it
  int max_context_ = 0;
  SpeculativeSetup spec_;
  std::unique_ptr<DraftProposer> proposer_;  // null: speculation off

  // Owned by the loop thread.
  std::unordered_map<uint64_t, Live> live_;
  std::vector<Request*> rows_;  // the last step's rows' requests (kept: no allocation per step)
  std::vector<grammar::GrammarMatcher*> row_matchers_;  // rows_' matchers (null: unconstrained)
  std::vector<Live*> step_live_;  // the step in flight's constrained rows' requests, by row
  size_t n_live_constrained_ = 0;  // live requests with a matcher (0: steps skip all mask work)
  struct PendingOutput {
    StreamCallback callback;
    RequestOutput out;
  };
  std::vector<PendingOutput> pending_outputs_;  // --enable-output-overlap: emitted, not yet handed over

  // Shared with submitters.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::vector<Live> incoming_;
  std::vector<uint64_t> aborts_;
  uint64_t next_id_ = 1;
  size_t n_in_flight_ = 0;  // submitted and not finished
  EngineStats stats_snapshot_;
  std::optional<std::string> dead_cause_;  // set once, by the loop thread, on a device fault
  bool stop_ = false;
  std::atomic<bool> follower_stop_{false};  // the destructor asks the follower loop to end
  bool follower_done_ = false;              // under mu_
  std::optional<std::string> follower_error_;
  bool stats_idle_ = true;  // the snapshot was taken with nothing in flight
  std::thread thread_;

  // Loop-thread counters. Host time per step, by consecutive phase (seconds, summed
  // over steps; architecture.md "Host time per step" says what each covers):
  // schedule | prepare launch wait (ModelRunner::forward) | process detokenize handoff.
  uint64_t n_steps_ = 0;
  double host_schedule_s_ = 0, host_prepare_s_ = 0, host_launch_s_ = 0, host_wait_s_ = 0;
  double host_process_s_ = 0, host_detokenize_s_ = 0, host_handoff_s_ = 0;
  double step_wall_s_ = 0;  // every step() call, start to end (the phases above add up to it)
  double gpu_s_ = 0;        // the backend's step timer, summed
  uint64_t n_finished_ = 0, n_prompt_tokens_ = 0, n_generated_tokens_ = 0;
  uint64_t n_stalled_schedules_ = 0;  // step() returned false (loop())
  // Structured output: mask work per step (runner StepTiming), summed.
  double grammar_mask_s_ = 0, grammar_mask_exposed_s_ = 0;
  uint64_t grammar_masked_rows_ = 0, grammar_mask_steps_ = 0, grammar_mask_hidden_steps_ = 0;
  uint64_t n_constrained_requests_ = 0;
  // Speculative decoding.
  std::vector<Request*> draft_reqs_;  // this step's requests asked for drafts (kept: no allocation)
  std::vector<int> draft_max_;
  uint64_t spec_proposed_ = 0, spec_accepted_ = 0, spec_verify_rows_ = 0, spec_off_steps_ = 0;
  uint64_t spec_backoff_steps_ = 0;  // decode rows that did not draft: their request backed off
  std::map<std::string, uint64_t> spec_accept_length_;  // accepted drafts per verify row -> rows
};

}  // namespace seam
