#include "engine/engine.h"

#include <condition_variable>
#include <mutex>

#include "engine/engine_bench_access.h"
#include "engine/engine_core.h"

namespace seam {

Engine::Engine(const EngineConfig& config) : core_(std::make_unique<EngineCore>(config)) {}
Engine::~Engine() = default;

const ModelInfo& Engine::model_info() const { return core_->model_info(); }
const Tokenizer& Engine::tokenizer() const { return core_->tokenizer(); }
int Engine::max_context() const { return core_->max_context(); }
int Engine::kv_pool_tokens() const { return core_->kv_pool_tokens(); }
const EngineConfig& Engine::config() const { return core_->config(); }

uint64_t Engine::submit(std::vector<int32_t> prompt_ids, const SamplingParams& params, StreamCallback callback) {
  std::vector<EngineRequest> group(1);
  group[0].prompt_ids = std::move(prompt_ids);
  group[0].params = params;
  group[0].callback = std::move(callback);
  return core_->submit_group(std::move(group))[0];
}

std::vector<uint64_t> Engine::submit_group(std::vector<EngineRequest> group) {
  return core_->submit_group(std::move(group));
}

void Engine::abort(uint64_t id) { core_->abort(id); }
EngineStats Engine::stats() const { return core_->stats(); }
void Engine::wait_idle() { core_->wait_idle(); }
std::optional<std::string> Engine::dead_cause() const { return core_->dead_cause(); }

void Engine::check_request(const std::vector<int32_t>& prompt_ids, const SamplingParams& params) const {
  EngineRequest q;
  q.prompt_ids = prompt_ids;
  q.params = params;
  core_->validate(q);
}

std::vector<GenerateResult> Engine::generate(const std::vector<std::vector<int32_t>>& prompts,
                                       const std::vector<SamplingParams>& params) {
  SEAM_ASSERT(prompts.size() == params.size());
  std::vector<GenerateResult> results(prompts.size());
  std::mutex mu;
  std::condition_variable cv;
  size_t n_done = 0;
  // One group, admitted whole or refused (a refusal queues nothing): the callbacks
  // below reference this frame, so no request may outlive a throw.
  std::vector<EngineRequest> group(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    results[i].prompt_ids = prompts[i];
    group[i].prompt_ids = prompts[i];
    group[i].params = params[i];
    group[i].callback = [&, i](const RequestOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      GenerateResult& g = results[i];
      g.output_ids.insert(g.output_ids.end(), o.new_ids.begin(), o.new_ids.end());
      g.text += o.new_text;
      g.logprobs.insert(g.logprobs.end(), o.new_logprobs.begin(), o.new_logprobs.end());
      if (!o.prompt_logprobs.empty()) g.prompt_logprobs = o.prompt_logprobs;
      if (o.finished) {
        g.finish_reason = o.finish_reason;
        g.queue_time_s = o.queue_time_s;
        g.ttft_s = o.ttft_s;
        g.e2e_s = o.e2e_s;
        g.token_times_s = o.token_times_s;
        ++n_done;
        cv.notify_all();
      }
    };
  }
  // submit_group checks every request (compiling each constraint once) before it queues
  // any, and stops at the first bad one: on a refusal, check each request to name every
  // bad one (nothing was queued; the checks are cheap and the grammars cached).
  try {
    submit_group(std::move(group));
  } catch (const Error&) {
    std::string errors;
    for (size_t i = 0; i < prompts.size(); ++i) {
      try {
        check_request(prompts[i], params[i]);
      } catch (const Error& e) {
        errors += (errors.empty() ? "" : "\n") + std::string("prompt ") + std::to_string(i + 1) + ": " + e.what();
      }
    }
    if (!errors.empty()) throw Error(errors);
    throw;  // not a request's fault (the engine is dead, or overloaded)
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return n_done == prompts.size(); });
  return results;
}


std::optional<std::string> Engine::wait_follower() { return core_->wait_follower(); }

ModelRunner& EngineBenchAccess::runner(Engine& engine) { return engine.core_->runner(); }
void EngineBenchAccess::on_every_rank(Engine& engine, const std::function<void(ModelRunner&)>& job) {
  engine.core_->on_every_rank(job);
}

}  // namespace seam
