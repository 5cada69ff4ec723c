#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backend/backend_factory.h"
#include "core/log.h"
#include "engine/engine_setup.h"
#include "kv/kv_pool.h"
#include "kv/radix_cache.h"
#include "kv/slot_allocator.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "runtime/model_runner.h"
#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace seam {

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Engine::Engine(const EngineConfig& cfg) : config_(cfg) {
  SEAM_CHECK(!cfg.model_path.empty(), "--model-path is required");
  model_config_ = load_model_config(cfg.model_path);
  tokenizer_ = load_tokenizer(cfg.tokenizer_path.empty() ? cfg.model_path : cfg.tokenizer_path);
  auto checkpoint = Checkpoint::open(cfg.model_path, model_config_);
  backend_ = make_backend(cfg.device);
  const size_t free_at_start = backend_->free_memory();

  const ResolvedSetup setup = resolve_setup(cfg, model_config_, backend_->device());
  max_context_ = setup.max_context;
  // GEMM tuning runs in the graph warm-ups and ends when the runner seals (capture_graphs).
  // Its scratch is allocated here, before the KV pool is sized, so the pool leaves room for it.
  if (setup.gemm_autotune) backend_->begin_gemm_tuning(setup.gemm_tuning);
  model_ = std::make_unique<LlamaModel>(*backend_, model_config_, *checkpoint, setup.dtype);
  checkpoint.reset();  // weights are on the backend now; unmap the files

  StepBufferSizes sizes;
  sizes.max_tokens = std::max(setup.scheduler.chunked_prefill_size, setup.scheduler.max_running_requests);
  sizes.max_seqs = setup.scheduler.max_running_requests;
  sizes.max_penalty_entries = sizes.max_seqs * std::min(max_context_, 4096);

  // The KV pool is sized from what is left after weights and step buffers,
  // keeping back a reserve for graphs (their real size is measured at capture).
  KvPoolShape shape;
  shape.n_layers = model_config_.n_layers;
  shape.n_kv_heads = model_config_.n_kv_heads;
  shape.head_dim = model_config_.head_dim;
  shape.max_reqs = setup.scheduler.max_running_requests;
  shape.max_context = max_context_;
  shape.dtype = setup.dtype;
  const size_t per_slot = KvPool::bytes_per_slot(shape);
  shape.n_slots = kv_pool_slots(cfg, setup, backend_->device(), free_at_start, backend_->free_memory(),
                                model_->weight_bytes(), per_slot);
  kv_ = std::make_unique<KvPool>(*backend_, shape);
  runner_ = std::make_unique<ModelRunner>(*backend_, *model_, *kv_, sizes, setup.graphs);
  runner_->capture_graphs();

  slots_ = std::make_unique<SlotAllocator>(shape.n_slots);
  cache_ = std::make_unique<RadixCache>(*slots_, !cfg.disable_radix_cache);
  KvPool* kv = kv_.get();
  scheduler_ = std::make_unique<Scheduler>(setup.scheduler, *slots_, *cache_,
                                           [kv](int row, int begin, const int32_t* s, int n) {
                                             kv->set_slots(row, begin, s, n);
                                           });
  publish_stats();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int Engine::kv_pool_tokens() const { return slots_->capacity(); }

void Engine::check_request(const std::vector<int32_t>& prompt_ids, const SamplingParams& params) const {
  params.validate(model_config_.vocab_size);
  SEAM_CHECK(!prompt_ids.empty(), "the prompt is empty (no tokens)");
  for (int32_t id : prompt_ids)
    SEAM_CHECK(id >= 0 && id < model_config_.vocab_size, "prompt token id ", id, " is outside the vocabulary of ",
               model_config_.vocab_size);
  const int n_prompt = int(prompt_ids.size());
  SEAM_CHECK(n_prompt < max_context_, "the prompt has ", n_prompt, " tokens; the context length is ", max_context_);
  // A request must fit the KV pool on its own, or retraction could never make room.
  // The last sampled token is never fed back, so n_prompt + n_output may reach max_context + 1.
  // KV holds every token but the last sampled one.
  const int64_t worst =
      int64_t(n_prompt) + std::min<int64_t>(params.max_new_tokens, max_context_ + 1 - n_prompt) - 1;
  SEAM_CHECK(worst <= kv_pool_tokens(), "the prompt (", n_prompt, " tokens) plus max_new_tokens (", params.max_new_tokens,
             ") needs ", worst, " KV slots; the pool has ", kv_pool_tokens());
}

uint64_t Engine::submit(std::vector<int32_t> prompt_ids, const SamplingParams& params, StreamCallback callback) {
  check_request(prompt_ids, params);
  auto req = std::make_unique<Request>();
  req->prompt_ids = std::move(prompt_ids);
  req->params = params;
  req->t_arrival = Clock::now();
  req->detok = std::make_unique<IncrementalDetokenizer>(*tokenizer_, params.skip_special_tokens, req->prompt_ids);
  std::lock_guard<std::mutex> lock(mu_);
  SEAM_CHECK(config_.max_queued_requests <= 0 || n_in_flight_ < size_t(config_.max_queued_requests),
             "server overloaded: ", n_in_flight_, " requests in flight (--max-queued-requests)");
  req->id = next_id_++;
  req->seed = params.seed ? *params.seed : config_.random_seed * 0x9e3779b97f4a7c15ull + req->id;
  const uint64_t id = req->id;
  incoming_.push_back(Live{std::move(req), std::move(callback)});
  ++n_in_flight_;
  stats_idle_ = false;
  cv_.notify_all();
  return id;
}

void Engine::abort(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  aborts_.push_back(id);
  cv_.notify_all();
}

void Engine::take_submissions() {
  std::vector<Live> incoming;
  std::vector<uint64_t> aborts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming.swap(incoming_);
    aborts.swap(aborts_);
  }
  for (Live& l : incoming) {
    Request* r = l.req.get();
    const uint64_t id = r->id;
    live_.emplace(id, std::move(l));
    if (r->params.max_new_tokens == 0) {  // nothing to generate
      r->finish = FinishReason::length;
      emit(*r, {}, true);
      finish_request(id);
      continue;
    }
    scheduler_->add(r);
  }
  for (uint64_t id : aborts) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;  // already finished
    Request& r = *it->second.req;
    scheduler_->abort(&r);
    r.finish = FinishReason::abort;
    emit(r, {}, true);
    finish_request(id);
  }
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !aborts_.empty() || scheduler_->has_work(); });
      if (stop_) return;
    }
    try {
      take_submissions();
      if (scheduler_->has_work()) step();
    } catch (const std::exception& e) {
      // A failed step fails its requests, never the process.
      log::error("engine step failed: %s", e.what());
      std::vector<uint64_t> ids;
      for (auto& [id, l] : live_) ids.push_back(id);
      for (uint64_t id : ids) {
        Request& r = *live_.at(id).req;
        scheduler_->abort(&r);
        r.finish = FinishReason::abort;
        RequestOutput out;
        out.id = id;
        out.finished = true;
        out.finish_reason = FinishReason::abort;
        out.error = e.what();
        live_.at(id).callback(out);
        finish_request(id);
      }
    }
    publish_stats();
  }
}

void Engine::step() {
  const auto t0 = Clock::now();
  ForwardBatch fb = scheduler_->schedule();
  const auto t1 = Clock::now();
  host_schedule_s_ += std::chrono::duration<double>(t1 - t0).count();
  if (fb.mode == ForwardMode::idle) {
    step_wall_s_ += std::chrono::duration<double>(t1 - t0).count();
    return;
  }
  for (const ScheduledSeq& s : scheduler_->scheduled())
    if (s.req->t_admitted == Clock::time_point{}) s.req->t_admitted = t1;
  std::vector<int32_t> sampled;
  runner_->forward(fb, sampled);
  const auto t2 = Clock::now();
  // The runner's phases are consecutive inside forward(); what is left of [t1, t2)
  // (the admission stamps, the call) is input preparation too.
  const StepTiming& st = runner_->last_timing();
  const double launch_s = 1e-3 * st.launch_ms, wait_s = 1e-3 * st.wait_ms;
  host_prepare_s_ += std::max(0.0, std::chrono::duration<double>(t2 - t1).count() - launch_s - wait_s);
  host_launch_s_ += launch_s;
  host_wait_s_ += wait_s;
  gpu_s_ += 1e-3 * st.gpu_ms;
  const double detokenize_before = host_detokenize_s_, handoff_before = host_handoff_s_;
  scheduler_->commit();
  process_outputs(sampled);
  const auto t3 = Clock::now();
  // process_outputs times the detokenizer and the callbacks itself; the rest is bookkeeping.
  const double output_s = std::chrono::duration<double>(t3 - t2).count();
  host_process_s_ += std::max(0.0, output_s - (host_detokenize_s_ - detokenize_before) -
                                       (host_handoff_s_ - handoff_before));
  step_wall_s_ += std::chrono::duration<double>(t3 - t0).count();
  ++n_steps_;
}

bool Engine::check_stop(Request& r, int32_t token) {
  const SamplingParams& p = r.params;
  const bool is_eos = std::find(model_config_.eos_token_ids.begin(), model_config_.eos_token_ids.end(), token) !=
                      model_config_.eos_token_ids.end();
  if ((is_eos && !p.ignore_eos) ||
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end()) {
    r.finish = FinishReason::stop;  // the stop token is not part of the output
    return true;
  }
  return false;
}

void Engine::process_outputs(const std::vector<int32_t>& sampled) {
  const auto& seqs = scheduler_->scheduled();
  std::vector<uint64_t> done;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!seqs[i].sample) continue;
    Request& r = *seqs[i].req;
    const int32_t token = sampled[i];
    const auto now = Clock::now();
    if (r.output_ids.empty()) r.t_first_token = now;
    r.t_last_token = now;
    r.token_times_s.push_back(std::chrono::duration<double>(now - r.t_arrival).count());
    std::vector<int32_t> new_ids;
    if (!check_stop(r, token)) {
      r.output_ids.push_back(token);
      new_ids.push_back(token);
      const size_t prev_len = r.text.size();
      const auto t_detok = Clock::now();
      r.text += r.detok->feed(token);
      host_detokenize_s_ += seconds_since(t_detok);
      ++n_generated_tokens_;
      // Stop strings: a new match must end inside the new text.
      size_t best = std::string::npos;
      for (const auto& s : r.params.stop) {
        const size_t from = prev_len >= s.size() ? prev_len - s.size() + 1 : 0;
        const size_t pos = r.text.find(s, from);
        if (pos != std::string::npos && pos < best) best = pos, r.matched_stop = s;
      }
      if (best != std::string::npos) {
        r.text.resize(best);
        r.finish = FinishReason::stop;
      }
      if (!r.finished() && (int(r.output_ids.size()) >= r.params.max_new_tokens || r.n_total() > max_context_))
        r.finish = FinishReason::length;
    }
    if (r.finished() && r.matched_stop.empty()) {
      const auto t_flush = Clock::now();
      r.text += r.detok->flush();
      host_detokenize_s_ += seconds_since(t_flush);
    }
    // The hand-off: the output built and passed to the request's callback (the server's
    // callback queues it for its HTTP thread).
    const auto t_emit = Clock::now();
    emit(r, std::move(new_ids), r.finished());
    host_handoff_s_ += seconds_since(t_emit);
    if (r.finished()) done.push_back(r.id);
  }
  for (uint64_t id : done) {
    scheduler_->finish(live_.at(id).req.get());
    finish_request(id);
  }
}

void Engine::emit(Request& r, std::vector<int32_t> new_ids, bool finished) {
  RequestOutput out;
  out.id = r.id;
  out.new_ids = std::move(new_ids);
  // Hold back text that could still become a stop string.
  size_t sendable = r.text.size();
  size_t hold = 0;
  for (const auto& s : r.params.stop) hold = std::max(hold, s.size() - 1);
  if (!finished) sendable = r.text.size() > hold ? r.text.size() - hold : 0;
  sendable = std::max(sendable, r.n_text_sent);
  // Never cut inside a UTF-8 character.
  while (sendable > r.n_text_sent && sendable < r.text.size() && (uint8_t(r.text[sendable]) & 0xC0) == 0x80)
    --sendable;
  out.new_text = r.text.substr(r.n_text_sent, sendable - r.n_text_sent);
  r.n_text_sent = sendable;
  out.finished = finished;
  out.finish_reason = r.finish;
  out.n_prompt_tokens = int(r.prompt_ids.size());
  out.n_output_tokens = int(r.output_ids.size());
  out.n_cached_tokens = r.n_prefix_shared;
  if (finished) {
    auto since = [&](Clock::time_point t) {
      return t == Clock::time_point{} ? 0.0 : std::chrono::duration<double>(t - r.t_arrival).count();
    };
    out.queue_time_s = since(r.t_admitted);
    out.ttft_s = since(r.t_first_token);
    out.e2e_s = seconds_since(r.t_arrival);
    out.token_times_s = r.token_times_s;
  }
  live_.at(r.id).callback(out);
}

void Engine::finish_request(uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  n_prompt_tokens_ += it->second.req->prompt_ids.size();
  ++n_finished_;
  live_.erase(it);
  std::lock_guard<std::mutex> lock(mu_);
  --n_in_flight_;
}

void Engine::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return n_in_flight_ == 0 && incoming_.empty() && stats_idle_; });
}

std::vector<GenerateResult> Engine::generate(const std::vector<std::vector<int32_t>>& prompts,
                                             const std::vector<SamplingParams>& params) {
  SEAM_ASSERT(prompts.size() == params.size());
  std::vector<GenerateResult> results(prompts.size());
  std::mutex mu;
  std::condition_variable cv;
  size_t n_done = 0;
  // Every request is checked before any is queued, so a bad one runs nothing.
  std::string errors;
  for (size_t i = 0; i < prompts.size(); ++i) {
    try {
      check_request(prompts[i], params[i]);
    } catch (const Error& e) {
      errors += (errors.empty() ? "" : "\n") + std::string("prompt ") + std::to_string(i + 1) + ": " + e.what();
    }
  }
  if (!errors.empty()) throw Error(errors);
  // The callbacks below reference this frame: should a submit still throw
  // (--max-queued-requests), the queued ones are aborted and waited for before
  // the frame unwinds.
  std::vector<uint64_t> submitted;
  try {
    for (size_t i = 0; i < prompts.size(); ++i) {
      results[i].prompt_ids = prompts[i];
      submitted.push_back(submit(prompts[i], params[i], [&, i](const RequestOutput& o) {
        std::lock_guard<std::mutex> lock(mu);
        GenerateResult& g = results[i];
        g.output_ids.insert(g.output_ids.end(), o.new_ids.begin(), o.new_ids.end());
        g.text += o.new_text;
        if (o.finished) {
          g.finish_reason = o.finish_reason;
          g.queue_time_s = o.queue_time_s;
          g.ttft_s = o.ttft_s;
          g.e2e_s = o.e2e_s;
          g.token_times_s = o.token_times_s;
          ++n_done;
          cv.notify_all();
        }
      }));
    }
  } catch (...) {
    for (uint64_t id : submitted) abort(id);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return n_done == submitted.size(); });
    throw;
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return n_done == prompts.size(); });
  return results;
}

void Engine::publish_stats() {
  const SchedulerStats& s = scheduler_->stats();
  const GraphStats& g = runner_->graph_stats();
  nlohmann::json j;
  j["steps"] = n_steps_;
  j["extend"] = s.steps_extend;
  j["decode"] = s.steps_decode;
  j["mixed"] = s.steps_mixed;
  j["retractions"] = s.retractions;
  j["prefix_cache_hit_tokens"] = s.prefix_cache_hit_tokens;
  j["prefill_tokens"] = s.prefill_tokens;
  j["peak_running_requests"] = s.peak_running;
  j["running_requests"] = scheduler_->n_running();
  j["waiting_requests"] = scheduler_->n_waiting();
  j["kv_pool_tokens"] = slots_->capacity();
  j["kv_free_tokens"] = slots_->n_free();
  j["kv_cached_tokens"] = cache_->n_cached_tokens();
  j["budget_violations"] = s.budget_violations;
  j["finished_requests"] = n_finished_;
  j["prompt_tokens"] = n_prompt_tokens_;
  j["generated_tokens"] = n_generated_tokens_;
  j["decode_graph_replays"] = g.decode_graph_replays;
  j["piecewise_replays"] = g.piecewise_replays;
  j["piecewise_replays_extend"] = g.piecewise_replays_extend;
  j["piecewise_replays_mixed"] = g.piecewise_replays_mixed;
  j["eager_steps"] = g.eager_steps;
  j["eager_by_reason"] = g.eager_by_reason;
  j["padding_tokens"] = g.padding_tokens;
  j["captured_decode_keys"] = g.captured_decode_keys;
  j["captured_piecewise_keys"] = g.captured_piecewise_keys;
  j["captures_after_seal"] = g.captures_after_seal;
  j["decode_capture_s"] = g.decode_capture_s;
  j["piecewise_capture_s"] = g.piecewise_capture_s;
  j["decode_graph_bytes"] = g.decode_graph_bytes;
  j["piecewise_graph_bytes"] = g.piecewise_graph_bytes;
  // Means over steps that ran a batch; the phases add up to step_wall_ms_per_step.
  const double steps = double(std::max<uint64_t>(n_steps_, 1));
  j["host_schedule_ms_per_step"] = 1e3 * host_schedule_s_ / steps;
  j["host_prepare_ms_per_step"] = 1e3 * host_prepare_s_ / steps;
  j["host_launch_ms_per_step"] = 1e3 * host_launch_s_ / steps;
  j["host_wait_ms_per_step"] = 1e3 * host_wait_s_ / steps;
  j["host_process_ms_per_step"] = 1e3 * host_process_s_ / steps;
  j["host_detokenize_ms_per_step"] = 1e3 * host_detokenize_s_ / steps;
  j["host_handoff_ms_per_step"] = 1e3 * host_handoff_s_ / steps;
  // prepare + launch + wait: the whole ModelRunner::forward (the name predates the split).
  j["forward_ms_per_step"] = 1e3 * (host_prepare_s_ + host_launch_s_ + host_wait_s_) / steps;
  j["step_wall_ms_per_step"] = 1e3 * step_wall_s_ / steps;
  j["gpu_ms_per_step"] = 1e3 * gpu_s_ / steps;
  j["gpu_busy_fraction"] = step_wall_s_ > 0 ? gpu_s_ / step_wall_s_ : 0.0;
  std::lock_guard<std::mutex> lock(mu_);
  stats_snapshot_ = std::move(j);
  // Idle only once the snapshot reflects every finished request.
  stats_idle_ = n_in_flight_ == 0 && incoming_.empty();
  if (stats_idle_) idle_cv_.notify_all();
}

nlohmann::json Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_snapshot_;
}

}  // namespace seam
