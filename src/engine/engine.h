// Engine: the engine loop on its own thread. Requests come in through a
// thread-safe submit(); each step the loop schedules one batch, runs it, and
// streams new tokens and text to per-request callbacks (called on the engine
// thread: they must be quick and must not call back into the engine).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_config.h"
#include "model/model_config.h"
#include "scheduler/request.h"
#include "scheduler/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace seam {

class Backend;
class Checkpoint;
class LlamaModel;
class KvPool;
class ModelRunner;
class RadixCache;
class Scheduler;
class SlotAllocator;

struct RequestOutput {
  uint64_t id = 0;
  std::vector<int32_t> new_ids;  // tokens generated since the last callback
  std::string new_text;          // text since the last callback (never half a UTF-8 char)
  bool finished = false;
  FinishReason finish_reason = FinishReason::none;
  int n_prompt_tokens = 0;
  int n_output_tokens = 0;
  int n_cached_tokens = 0;
  std::string error;             // set when the engine failed the request
  // Timing (seconds since arrival), filled on the final callback.
  double queue_time_s = 0;       // arrival -> first scheduled
  double ttft_s = 0;             // arrival -> first token
  double e2e_s = 0;              // arrival -> finish
  std::vector<double> token_times_s;  // arrival -> each output token
};
using StreamCallback = std::function<void(const RequestOutput&)>;

struct GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  std::string text;
  FinishReason finish_reason = FinishReason::none;
  double queue_time_s = 0, ttft_s = 0, e2e_s = 0;
  std::vector<double> token_times_s;
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelConfig& model_config() const { return model_config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int max_context() const { return max_context_; }
  int kv_pool_tokens() const;
  const EngineConfig& config() const { return config_; }

  // Throws seam::Error when submit() would refuse the request (bad params, a
  // prompt that cannot fit the context or the KV pool); queues nothing.
  void check_request(const std::vector<int32_t>& prompt_ids, const SamplingParams& params) const;
  // Validates and queues a request; throws seam::Error on bad input (the request
  // is then not queued). Returns its id. Thread-safe.
  uint64_t submit(std::vector<int32_t> prompt_ids, const SamplingParams& params, StreamCallback callback);
  // Aborts a request wherever it is; its callback gets finished/abort. Thread-safe.
  void abort(uint64_t id);
  // Blocking convenience: submits all at once, waits for all. Results in input order.
  // Checks every request first: throws seam::Error listing each bad one ("prompt 2: ...",
  // one per line) and runs none.
  std::vector<GenerateResult> generate(const std::vector<std::vector<int32_t>>& prompts,
                                       const std::vector<SamplingParams>& params);
  // A snapshot of engine stats as one JSON object. Thread-safe.
  nlohmann::json stats() const;
  // The model runner, for benchmarks that drive forward steps directly. Only
  // while no request is in flight (the engine loop then never touches it).
  ModelRunner& runner_for_benchmark() { return *runner_; }
  // Blocks until no request is waiting or running and stats() reflects them all.
  void wait_idle();

 private:
  struct Live {
    std::unique_ptr<Request> req;
    StreamCallback callback;
  };
  void loop();
  void step();
  void take_submissions();
  void process_outputs(const std::vector<int32_t>& sampled);
  bool check_stop(Request& r, int32_t token);
  void emit(Request& r, std::vector<int32_t> new_ids, bool finished);
  void finish_request(uint64_t id);

  EngineConfig config_;
  ModelConfig model_config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<SlotAllocator> slots_;
  std::unique_ptr<RadixCache> cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  int max_context_ = 0;

  // Owned by the loop thread.
  std::unordered_map<uint64_t, Live> live_;

  // Shared with submitters.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::vector<Live> incoming_;
  std::vector<uint64_t> aborts_;
  uint64_t next_id_ = 1;
  uint64_t seed_counter_ = 0;
  size_t n_in_flight_ = 0;  // submitted and not finished
  nlohmann::json stats_snapshot_;
  bool stop_ = false;
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
  void publish_stats();
};

}  // namespace seam
