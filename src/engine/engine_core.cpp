#include "engine/engine_core.h"

#include <limits>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "backend/backend_factory.h"
#include "core/log.h"
#include "engine/engine_setup.h"
#include "engine/kv_cache_dtype.h"
#include "engine/ngram_proposer.h"
#include "engine/random_draft_proposer.h"
#include "engine/standalone_proposer.h"
#include "graph/graph_buckets.h"
#include "engine/structured_output.h"
#include "engine/tp_group.h"
#include "kv/kv_pool.h"
#include "kv/radix_cache.h"
#include "kv/slot_allocator.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "model/model_registry.h"
#include "runtime/model_runner.h"
#include "runtime/step_result.h"
#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace seam {

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

EngineCore::EngineCore(const EngineConfig& cfg) : config_(cfg) {
  SEAM_CHECK(!cfg.model_path.empty(), "--model-path is required");
  model_config_ = load_model_config(cfg.model_path);
  apply_quantization_flag(model_config_.quant, cfg.quantization);  // --quantization (model/quant_config.h)
  const bool dummy = Checkpoint::is_dummy_format(cfg.load_format);
  const std::string tokenizer_dir = cfg.tokenizer_path.empty() ? cfg.model_path : cfg.tokenizer_path;
  // The engine detokenizes and compiles grammars, so even random weights need a tokenizer.
  SEAM_CHECK(!dummy || std::filesystem::exists(std::filesystem::path(tokenizer_dir) / "tokenizer.json") ||
                 std::filesystem::exists(std::filesystem::path(tokenizer_dir) / "tokenizer.model"),
             "--load-format dummy: ", tokenizer_dir, " has no tokenizer.json or tokenizer.model; the engine needs one "
             "(tools/make_random_models.py --tokenizer-only VOCAB DIR/tokenizer.json writes a byte-level one covering "
             "the vocabulary), or pass --tokenizer-path");
  tokenizer_ = load_tokenizer(tokenizer_dir);
  auto checkpoint = Checkpoint::load(cfg.model_path, model_config_, cfg.load_format);  // --load-format

  const ResolvedSetup setup = resolve_setup(cfg, model_config_, cfg.device);
  max_context_ = setup.max_context;
  spec_ = setup.speculative;
  if (spec_.algorithm == SpeculativeAlgorithm::ngram)
    proposer_ = cfg.bench_worst_case_drafts
                    ? std::unique_ptr<DraftProposer>(std::make_unique<RandomDraftProposer>(
                          spec_.ngram_min_window, spec_.ngram_max_window, model_config_.vocab_size))
                    : std::make_unique<NgramProposer>(spec_.ngram_min_window, spec_.ngram_max_window);
  model_info_.architecture = model_config_.architecture;
  model_info_.vocab_size = model_config_.vocab_size;
  model_info_.eos_token_ids = model_config_.eos_token_ids;
  model_info_.max_context = max_context_;
  // Structured output: one compiler for the served vocabulary. The model's EOS ids stop a
  // constrained row only where its grammar may end (the tokenizer's own EOS too).
  structured_ = std::make_unique<StructuredOutput>(*tokenizer_, model_config_.eos_token_ids,
                                                   size_t(cfg.grammar_cache_mb) << 20);
  // The KV pool's dtype (kv_cache_dtype.h): a bad flag fails before any rank loads weights.
  const DType kv_dtype = resolve_kv_cache_dtype(cfg.kv_cache_dtype, setup.dtype, cfg.device);

  RankPlan& plan = *(rank_plan_ = std::make_unique<RankPlan>());
  plan.cfg = &config_;
  plan.model = &model_config_;
  plan.checkpoint = checkpoint.get();
  plan.setup = setup;
  plan.tp = resolve_tp_plan(cfg, model_config_, cfg.device);
  StepBufferSizes& sizes = plan.sizes;
  sizes.max_tokens = std::max(setup.scheduler.chunked_prefill_size, setup.scheduler.max_running_requests);
  // A step's rows: the running requests, plus k more one-token rows per request that verifies
  // drafts (at most --speculative-max-batch-size of them).
  sizes.max_seqs = setup.scheduler.max_running_requests + spec_.max_batch_size * spec_.n_draft_tokens;
  sizes.max_tokens = std::max(sizes.max_tokens, sizes.max_seqs);
  sizes.max_penalty_entries = sizes.max_seqs * std::min(max_context_, 4096);
  sizes.logprobs = !cfg.disable_logprobs;

  // The KV pool is sized from what is left after weights and step buffers,
  // keeping back a reserve for graphs (their real size is measured at capture).
  KvPoolShape& shape = plan.kv_shape;
  shape.n_layers = model_config_.n_layers;
  shape.n_kv_heads = model_config_.n_kv_heads;  // each rank holds its share (rank_parts.cpp)
  shape.head_dim = model_config_.head_dim;
  shape.max_reqs = setup.scheduler.max_running_requests;
  shape.max_context = max_context_;
  shape.dtype = kv_dtype;  // kv_cache_dtype.h

  // Backend, model (shard), KV pool, runner and graphs: the path every rank takes
  // (engine/rank_parts.h). With TP, this thread builds the node's first rank while the
  // group's worker threads build the others.
  const int leader_rank = plan.tp.first_local_rank();
  if (plan.tp.active()) {
    tp_ = std::make_unique<TpGroup>(plan, leader_rank);
    log::set_thread_prefix(detail::concat("tp rank ", leader_rank, "/", plan.tp.tp_size, ": "));
  }
  RankParts parts;
  try {
    parts = build_rank_parts(plan, leader_rank, tp_ ? tp_->store_port() : 0);
  } catch (...) {
    log::set_thread_prefix("");
    throw;
  }
  log::set_thread_prefix("");
  checkpoint.reset();  // weights are on the backends now; unmap the files
  plan.checkpoint = nullptr;
  tp_store_ = std::move(parts.store);
  tp_comm_ = std::move(parts.comm);
  group_memory_ = std::move(parts.group_memory);
  if (tp_) tp_->watch(tp_comm_.get());
  backend_ = std::move(parts.backend);
  model_ = std::move(parts.model);
  kv_ = std::move(parts.kv);
  runner_ = std::move(parts.runner);
  shape.n_slots = kv_->shape().n_slots;
  if (spec_.algorithm == SpeculativeAlgorithm::standalone) {
    // The draft model's own runner, KV pool and graphs (decode keys up to the drafting batch;
    // the target's piecewise keys for catch-up). Its memory is not yet taken out of the
    // target's KV budget (a GPU to-do); the CPU pool has room.
    StandaloneShape ds;
    ds.max_reqs = setup.scheduler.max_running_requests;
    ds.max_context = max_context_;
    ds.chunk_tokens = setup.scheduler.chunked_prefill_size;
    ds.max_rows = spec_.max_batch_size;
    ds.n_slots = std::min<int>(shape.n_slots, 1 + spec_.max_batch_size * max_context_);
    GraphConfig dg = setup.graphs;
    if (!dg.disable_cuda_graph) dg.decode_buckets = default_decode_buckets(spec_.max_batch_size);
    proposer_ = std::make_unique<StandaloneProposer>(*backend_, spec_.draft_model_path, setup.dtype,
                                                     model_config_.vocab_size, ds, dg);
  }

  slots_ = std::make_unique<SlotAllocator>(shape.n_slots);
  cache_ = std::make_unique<RadixCache>(*slots_, !cfg.disable_radix_cache);
  scheduler_ = std::make_unique<Scheduler>(setup.scheduler, *slots_, *cache_);
  publish_stats();
  if (rank_plan_->tp.node_rank > 0) {
    log::info("node %d of %d: ranks %d..%d follow node 0's steps", rank_plan_->tp.node_rank, rank_plan_->tp.nnodes,
              leader_rank, leader_rank + rank_plan_->tp.ranks_per_node - 1);
    thread_ = std::thread([this] { follower_loop(); });
  } else {
    thread_ = std::thread([this] { loop(); });
  }
}

EngineCore::~EngineCore() {
  follower_stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int EngineCore::kv_pool_tokens() const { return slots_->capacity(); }

void EngineCore::follower_loop() {
  std::optional<std::string> error;
  try {
    while (std::optional<ForwardBatch> fb = tp_->next_batch(follower_stop_)) tp_->forward(*fb, *runner_);
    log::info("node 0 closed the tensor-parallel group: this node stops");
  } catch (const std::exception& e) {
    error = e.what();
    log::error("this node stops following node 0: %s", e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  follower_done_ = true;
  follower_error_ = error;
  idle_cv_.notify_all();
}

std::optional<std::string> EngineCore::wait_follower() {
  SEAM_CHECK(rank_plan_->tp.node_rank > 0, "wait_follower: node 0 runs the scheduler, it follows nobody");
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return follower_done_; });
  return follower_error_;
}

void EngineCore::on_every_rank(const std::function<void(ModelRunner&)>& job) {
  if (tp_) return tp_->run_on_every_rank(job, *runner_);
  job(*runner_);
}

void EngineCore::validate(const EngineRequest& q, std::shared_ptr<const grammar::CompiledGrammar>* compiled) const {
  const int vocab = model_config_.vocab_size;
  q.params.validate(vocab);
  if (config_.disable_logprobs && q.params.logprobs >= 0)
    throw invalid_request("logprobs are disabled on this server (--disable-logprobs)", "logprobs");
  if (q.prompt_ids.empty()) throw invalid_request("the prompt is empty (no tokens)", "prompt");
  for (int32_t id : q.prompt_ids)
    if (id < 0 || id >= vocab)
      throw invalid_request(detail::concat("prompt token id ", id, " is outside the vocabulary of ", vocab), "prompt");
  const int n_prompt = int(q.prompt_ids.size());
  if (n_prompt >= max_context_)
    throw invalid_request(
        detail::concat("the prompt has ", n_prompt, " tokens; the context length is ", max_context_), "prompt");
  // A request must fit the KV pool on its own, or retraction could never make room.
  // The last sampled token is never fed back, so n_prompt + n_output may reach max_context + 1.
  // KV holds every token but the last sampled one.
  const int64_t worst =
      int64_t(n_prompt) + std::min<int64_t>(q.params.max_new_tokens, max_context_ + 1 - n_prompt) - 1;
  if (worst > kv_pool_tokens())
    throw invalid_request(detail::concat("the prompt (", n_prompt, " tokens) plus max_new_tokens (",
                                         q.params.max_new_tokens, ") needs ", worst, " KV slots; the pool has ",
                                         kv_pool_tokens()),
                          "max_new_tokens");
  // Last: the other checks are cheap, a compile may not be.
  if (q.params.constraint) {
    auto g = structured_->compile(*q.params.constraint);
    if (compiled) *compiled = std::move(g);
  }
}

std::vector<uint64_t> EngineCore::submit_group(std::vector<EngineRequest> group) {
  SEAM_CHECK(rank_plan_->tp.node_rank == 0, "--node-rank ", rank_plan_->tp.node_rank,
             " follows node 0: requests go to node 0's engine");
  std::vector<std::shared_ptr<const grammar::CompiledGrammar>> grammars(group.size());
  for (size_t i = 0; i < group.size(); ++i) validate(group[i], &grammars[i]);
  const int64_t max_queued = config_.max_queued_requests;
  if (max_queued > 0 && int64_t(group.size()) > max_queued)
    throw invalid_request(detail::concat(group.size(), " requests at once can never be admitted: the limit is ",
                                         max_queued, " in flight (--max-queued-requests)"),
                          "n");
  std::vector<std::unique_ptr<Request>> reqs;
  // Each request (each of n choices) gets its own matcher over the shared compiled grammar.
  std::vector<std::unique_ptr<grammar::GrammarMatcher>> matchers(group.size());
  for (size_t i = 0; i < group.size(); ++i)
    if (grammars[i]) matchers[i] = std::make_unique<grammar::GrammarMatcher>(grammars[i]);
  for (EngineRequest& q : group) {
    auto req = std::make_unique<Request>();
    req->prompt_ids = std::move(q.prompt_ids);
    req->params = q.params;
    req->t_arrival = Clock::now();
    req->detok = std::make_unique<IncrementalDetokenizer>(*tokenizer_, q.params.skip_special_tokens, req->prompt_ids);
    reqs.push_back(std::move(req));
  }
  std::vector<uint64_t> ids;
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_cause_) throw engine_dead(*dead_cause_);
  // Admission: the whole group, or none of it.
  if (max_queued > 0 && int64_t(n_in_flight_) + int64_t(group.size()) > max_queued)
    throw overloaded(detail::concat("server overloaded: ", n_in_flight_, " requests in flight, the limit is ",
                                    max_queued, " (--max-queued-requests); retry later"));
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request& r = *reqs[i];
    r.id = next_id_++;
    r.seed = r.params.seed ? *r.params.seed : config_.random_seed * 0x9e3779b97f4a7c15ull + r.id;
    ids.push_back(r.id);
    incoming_.push_back(Live{std::move(reqs[i]), std::move(group[i].callback), false, std::move(matchers[i]),
                             DraftBackoff(spec_.max_backoff_steps)});
  }
  n_in_flight_ += ids.size();
  stats_idle_ = false;
  cv_.notify_all();
  return ids;
}

void EngineCore::abort(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  aborts_.push_back(id);
  cv_.notify_all();
}

void EngineCore::take_submissions() {
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
    if (l.matcher) ++n_live_constrained_, ++n_constrained_requests_;
    live_.emplace(id, std::move(l));
    if (r->params.max_new_tokens == 0 && !r->params.prompt_logprobs) {  // nothing to generate
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

void EngineCore::loop() {
  // Stalled: the last step found nothing to run and changed nothing, though requests wait
  // (the head of the queue cannot be admitted yet). Stepping again would find the same, so
  // the loop sleeps until a submit or an abort changes what can run, instead of spinning.
  bool stalled = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || !incoming_.empty() || !aborts_.empty() || (!stalled && scheduler_->has_work());
      });
      if (stop_) break;
    }
    try {
      take_submissions();
      const bool was_stalled = stalled;
      stalled = scheduler_->has_work() && !step();
      // No step follows at once: hand over what the last one emitted now (before the stats
      // below can tell a waiter that the engine is idle).
      if (stalled || !scheduler_->has_work()) flush_outputs_after_step();
      if (stalled && !was_stalled)
        log::warn("engine: %zu requests wait and none can be scheduled; waiting for a submit or an abort",
                  scheduler_->n_waiting());
    } catch (const DeviceError& e) {
      // Fatal: the device's state is gone (a CUDA error is sticky). Fail everything,
      // refuse what comes later, and never step again.
      log::error("engine is dead: device fault: %s", e.what());
      fail_all(ErrorKind::engine_dead, e.what());
      publish_stats();
      return;
    } catch (const std::exception& e) {
      // Any other failed step fails its requests, never the process.
      log::error("engine step failed: %s", e.what());
      fail_all(ErrorKind::internal, e.what());
    }
    publish_stats();
  }
  flush_outputs_after_step();  // stopping: hand over what the last step emitted
}

void EngineCore::fail_all(ErrorKind kind, const std::string& cause) {
  flush_outputs_after_step();  // what was emitted before the failure, first
  std::string message = cause;
  if (kind == ErrorKind::engine_dead) {
    message = engine_dead(cause).what();
    std::vector<Live> incoming;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dead_cause_ = cause;  // from here on submit() refuses: nothing new reaches incoming_
      incoming.swap(incoming_);
      aborts_.clear();
    }
    for (Live& l : incoming) {
      const uint64_t id = l.req->id;
      if (l.matcher) ++n_live_constrained_;  // finish_request counts it out
      live_.emplace(id, std::move(l));
    }
  }
  std::vector<uint64_t> ids;
  for (auto& [id, l] : live_) ids.push_back(id);
  for (uint64_t id : ids) fail_request(id, kind, message);
}

void EngineCore::fail_request(uint64_t id, ErrorKind kind, const std::string& message) {
  // The request's (and every other's) earlier outputs before its failure; inside a step, or after
  // fail_all's flush (then none are left), so its time is the step's.
  flush_outputs();
  Request& r = *live_.at(id).req;
  RequestOutput out;
  out.id = id;
  out.finished = true;
  out.finish_reason = FinishReason::abort;
  out.error = message;
  out.error_kind = kind;
  out.n_prompt_tokens = int(r.prompt_ids.size());
  out.n_output_tokens = int(r.output_ids.size());
  out.n_cached_tokens = r.n_prefix_shared;  // before abort releases the borrowed prefix
  scheduler_->abort(&r);
  r.finish = FinishReason::abort;
  try {
    Live& l = live_.at(id);
    release_admission(l);
    l.callback(out);
  } catch (const std::exception& e) {  // a callback must not throw; never let it end the loop thread
    log::error("a request callback threw: %s", e.what());
  }
  finish_request(id);
}

bool EngineCore::step() {
  const auto t0 = Clock::now();
  if (proposer_) propose_drafts();
  const uint64_t retractions_before = scheduler_->stats().retractions;
  ForwardBatch fb = scheduler_->schedule();
  const auto t1 = Clock::now();
  host_schedule_s_ += std::chrono::duration<double>(t1 - t0).count();
  if (fb.mode == ForwardMode::idle) {
    flush_outputs();  // no forward to overlap them with (its time is handoff, inside the step's wall)
    step_wall_s_ += seconds_since(t0);
    // A schedule() that retracted every decoding request returns idle too, but the next one
    // admits them again: only an idle schedule that changed nothing is a stall.
    if (scheduler_->stats().retractions != retractions_before) return true;
    ++n_stalled_schedules_;
    return false;
  }
  if (n_live_constrained_ > 0) prepare_masks(fb);
  // The last step's outputs go to their callbacks while the device runs this one (the handoff
  // phase's time, counted by flush_outputs, is then off the step's critical path on CUDA).
  if (!pending_outputs_.empty()) fb.while_device_runs = [this] { flush_outputs(); };
  const double handoff_before_forward = host_handoff_s_;
  const StepResult result = tp_ ? tp_->forward(fb, *runner_) : runner_->forward(fb);
  flush_outputs();  // any the runner did not hand over (a path that never reached the hook)
  const auto t2 = Clock::now();
  // The runner's phases are consecutive inside forward(); what is left of [t1, t2)
  // (the call) is input preparation too, but for the outputs handed over inside it: the handoff
  // time flush_outputs counted there (the hook's and the flush after it), so the phases add up to
  // the step's wall time exactly.
  const StepTiming& st = runner_->last_timing();
  const double launch_s = 1e-3 * st.launch_ms, wait_s = 1e-3 * st.wait_ms;
  host_prepare_s_ += std::max(0.0, std::chrono::duration<double>(t2 - t1).count() - launch_s - wait_s -
                                       (host_handoff_s_ - handoff_before_forward));
  host_launch_s_ += launch_s;
  host_wait_s_ += wait_s;
  gpu_s_ += 1e-3 * st.gpu_ms;
  if (st.n_masked_rows > 0) {
    grammar_mask_s_ += 1e-3 * st.mask_ms;
    grammar_mask_exposed_s_ += 1e-3 * st.mask_exposed_ms;
    grammar_masked_rows_ += uint64_t(st.n_masked_rows);
    ++grammar_mask_steps_;
    if (st.mask_exposed_ms == 0) ++grammar_mask_hidden_steps_;
  }
  const double detokenize_before = host_detokenize_s_, handoff_before = host_handoff_s_;
  process_outputs(result, t1);
  const auto t3 = Clock::now();
  // process_outputs times the detokenizer and the callbacks itself; the rest is bookkeeping.
  const double output_s = std::chrono::duration<double>(t3 - t2).count();
  host_process_s_ += std::max(0.0, output_s - (host_detokenize_s_ - detokenize_before) -
                                       (host_handoff_s_ - handoff_before));
  step_wall_s_ += std::chrono::duration<double>(t3 - t0).count();
  ++n_steps_;
  return true;
}

void EngineCore::prepare_masks(ForwardBatch& fb) {
  const int S = fb.n_seqs();
  fb.mask_rows.clear();
  step_live_.assign(size_t(S), nullptr);
  for (int s = 0; s < S; ++s) {
    if (!fb.samples[size_t(s)]) continue;  // a prompt chunk before the last: its sample is dropped
    Live& l = live_.at(fb.request_ids[size_t(s)]);
    if (!l.matcher) continue;
    step_live_[size_t(s)] = &l;
    fb.mask_rows.push_back(s);
  }
  if (!fb.mask_rows.empty())
    fb.fill_mask = [this](int row, uint32_t* words, int n_words) {
      Live& l = *step_live_[size_t(row)];
      structured_->fill_mask(*l.matcher, l.req->params, words, n_words);
    };
}

void EngineCore::process_outputs(const StepResult& result, Clock::time_point t_scheduled) {
  // The step is committed from its result alone: every row names its request,
  // whose fed tokens now have KV.
  rows_.clear();
  row_matchers_.clear();
  for (const SeqResult& q : result.seqs) {
    Live& l = live_.at(q.request_id);
    Request* r = l.req.get();
    row_matchers_.push_back(l.matcher.get());
    if (r->t_admitted == Clock::time_point{}) r->t_admitted = t_scheduled;
    // A verify row commits below, once its drafts are judged.
    if (q.draft_index < 0) r->commit_step(q.n_new, q.sample);
    rows_.push_back(r);
    if (!q.prompt_logprobs.empty()) {
      if (r->prompt_logprobs.empty()) {
        r->prompt_logprobs.resize(r->prompt_ids.size());
        for (size_t p = 0; p < r->prompt_ids.size(); ++p) r->prompt_logprobs[p].id = r->prompt_ids[p];
        r->prompt_logprobs[0].logprob = std::numeric_limits<float>::quiet_NaN();  // the first has none
      }
      for (size_t i = 0; i < q.prompt_logprobs.size(); ++i)
        r->prompt_logprobs[size_t(q.prompt_lp_first) + i] = q.prompt_logprobs[i];
    }
  }
  std::vector<uint64_t> done;
  for (size_t i = 0; i < result.seqs.size(); ++i) {
    const SeqResult& q = result.seqs[i];
    if (!q.sample || q.draft_index > 0) continue;  // a verify row's later sub-rows go with its first
    commit_row(result, i, done);
  }
  for (uint64_t id : done) {
    scheduler_->finish(live_.at(id).req.get());
    finish_request(id);
  }
}

void EngineCore::emit(Request& r, std::vector<int32_t> new_ids, bool finished,
                      std::vector<TokenLogprob> new_logprobs) {
  RequestOutput out;
  out.id = r.id;
  out.new_ids = std::move(new_ids);
  out.new_logprobs = std::move(new_logprobs);
  if (r.params.prompt_logprobs && !r.prompt_logprobs_sent && (!out.new_ids.empty() || finished)) {
    r.prompt_logprobs_sent = true;
    if (r.prompt_logprobs.empty() && r.prompt_ids.size() == 1)  // a one-token prompt: no logits before it
      r.prompt_logprobs.push_back(TokenLogprob{r.prompt_ids[0], std::numeric_limits<float>::quiet_NaN(), {}});
    out.prompt_logprobs = std::move(r.prompt_logprobs);
  }
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
  Live& l = live_.at(r.id);
  if (finished) release_admission(l);
  deliver(l, std::move(out));
}

void EngineCore::deliver(Live& l, RequestOutput out) {
  if (!config_.enable_output_overlap) {
    l.callback(out);
    return;
  }
  pending_outputs_.push_back(PendingOutput{l.callback, std::move(out)});
}

void EngineCore::flush_outputs() {
  if (pending_outputs_.empty()) return;
  const auto t0 = Clock::now();
  std::vector<PendingOutput> outputs;
  outputs.swap(pending_outputs_);  // a callback never re-enters the engine, but keep the list stable
  for (PendingOutput& p : outputs) {
    try {
      p.callback(p.out);
    } catch (const std::exception& e) {  // a callback must not throw; never let it end the loop thread
      log::error("a request callback threw: %s", e.what());
    }
  }
  outputs.clear();
  if (pending_outputs_.empty()) pending_outputs_.swap(outputs);  // keep the capacity: no allocation a step
  host_handoff_s_ += seconds_since(t0);
}

void EngineCore::flush_outputs_after_step() {
  if (pending_outputs_.empty()) return;
  const double before = host_handoff_s_;
  flush_outputs();
  step_wall_s_ += host_handoff_s_ - before;
}

void EngineCore::release_admission(Live& l) {
  if (l.admission_released) return;
  l.admission_released = true;
  std::lock_guard<std::mutex> lock(mu_);
  --n_in_flight_;
}

void EngineCore::finish_request(uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  if (it->second.matcher) --n_live_constrained_;
  if (proposer_) proposer_->release(id);
  n_prompt_tokens_ += it->second.req->prompt_ids.size();
  ++n_finished_;
  release_admission(it->second);
  live_.erase(it);
}

void EngineCore::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return n_in_flight_ == 0 && incoming_.empty() && stats_idle_; });
}

std::optional<std::string> EngineCore::dead_cause() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_cause_;
}

}  // namespace seam
