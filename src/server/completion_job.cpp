#include "server/completion_job.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <random>

#include "server/api_error.h"
#include "server/prompt_ids.h"

namespace seam {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A failed choice as the client reads it: a dead engine says so ("engine is
// dead: <cause>", the engine's own words); any other failure is the engine's.
std::string error_message(ErrorKind kind, const std::string& error) {
  return kind == ErrorKind::engine_dead ? error : "the engine failed the request: " + error;
}

// "cmpl-" + 24 hex digits: random per process, then a counter (unique, cheap).
std::string make_response_id(ApiKind kind) {
  static const uint64_t prefix = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ uint64_t(std::time(nullptr));
  static std::atomic<uint64_t> counter{0};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", (unsigned long long)prefix,
                (unsigned long long)(counter.fetch_add(1) & 0xffffffffull));
  return std::string(kind == ApiKind::chat ? "chatcmpl-" : "cmpl-") + buf;
}

}  // namespace

CompletionJob::CompletionJob(const ServerContext& ctx, ApiRequest request)
    : ctx_(ctx), request_(std::move(request)), t_start_(Clock::now()) {
  header_.kind = request_.kind;
  header_.id = make_response_id(request_.kind);
  header_.created = int64_t(std::time(nullptr));
  header_.model = ctx_.model_name;
}

CompletionJob::~CompletionJob() = default;

std::string CompletionJob::api_param(const std::string& engine_param) const {
  const bool chat = request_.kind == ApiKind::chat;
  if (engine_param == "prompt") return chat ? "messages" : "prompt";
  if (engine_param == "max_new_tokens") return chat && !request_.max_tokens_given ? "messages" : "max_tokens";
  return engine_param;  // the sampling fields share their OpenAI names
}

void CompletionJob::submit() {
  Engine& engine = *ctx_.engine;
  const Tokenizer& tok = engine.tokenizer();
  const int max_context = engine.max_context();

  // Prompts -> token ids.
  if (request_.kind == ApiKind::chat) {
    prompt_ids_.push_back(encode_chat_prompt(*ctx_.chat_template, tok, request_));
  } else {
    for (const PromptInput& p : request_.prompts)
      prompt_ids_.push_back(p.is_ids ? p.ids : encode_text_prompt(tok, p.text, request_.add_special_tokens));
  }

  // The engine validates every request (the ids, the sampling fields, the KV
  // pool) and admits the group or refuses it; the server adds only OpenAI's
  // own rule that prompt + max_tokens fit the context, with OpenAI's message
  // (the engine would instead end the generation at the context length).
  SamplingParams params = request_.params;
  if (request_.kind == ApiKind::chat)
    params.stop_token_ids.insert(params.stop_token_ids.end(), ctx_.chat_stop_ids.begin(), ctx_.chat_stop_ids.end());
  const int64_t n = int64_t(prompt_ids_.size()) * request_.n;
  choices_.resize(size_t(n));
  std::vector<EngineRequest> group;
  group.reserve(size_t(n));
  auto self = shared_from_this();
  for (size_t pi = 0; pi < prompt_ids_.size(); ++pi) {
    const int n_prompt = int(prompt_ids_[pi].size());
    SamplingParams p = params;
    if (request_.kind == ApiKind::chat && !request_.max_tokens_given) p.max_new_tokens = max_context - n_prompt;
    if (n_prompt >= max_context || int64_t(n_prompt) + p.max_new_tokens > max_context)
      throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                            " tokens. However, you requested " + std::to_string(int64_t(n_prompt) + p.max_new_tokens) +
                            " tokens (" + std::to_string(n_prompt) + " in the prompt, " +
                            std::to_string(p.max_new_tokens) + " for the completion). Reduce the prompt or max_tokens.",
                        request_.kind == ApiKind::chat ? "messages" : "max_tokens");
    for (int j = 0; j < request_.n; ++j) {
      const int k = int(pi) * request_.n + j;
      EngineRequest q;
      q.prompt_ids = prompt_ids_[pi];
      q.params = p;
      if (q.params.seed) q.params.seed = *q.params.seed + uint64_t(j);  // n samples of one prompt differ
      q.callback = [self, k](const RequestOutput& o) { self->on_output(k, o); };
      group.push_back(std::move(q));
    }
  }

  // Counted before the submit: a choice may finish (and be uncounted) before submit_group returns.
  ctx_.n_in_flight->fetch_add(n);
  std::vector<uint64_t> ids;
  try {
    ids = engine.submit_group(std::move(group));
  } catch (const std::exception& e) {
    ctx_.n_in_flight->fetch_sub(n);
    ApiError a = from_exception(e);
    if (!a.param().empty()) a = ApiError(a.status(), a.what(), api_param(a.param()), a.type(), a.code());
    throw a;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < ids.size(); ++k) {
    choices_[k].engine_id = ids[k];
    choices_[k].submitted = true;
  }
}

// On the engine thread, once per request per step: a time stamp, a queue
// append and a notify. Latency metrics are observed later by the HTTP thread
// from the stamps; only a request's end is counted here, so that requests
// whose client went away (nobody drains them) are still counted.
void CompletionJob::on_output(int k, const RequestOutput& out) {
  const auto now = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  Choice& c = choices_[size_t(k)];
  Event e;
  e.choice = k;
  e.t = now;
  e.n_new_ids = out.new_ids.size();
  e.new_text = out.new_text;
  e.finished = out.finished;
  e.finish = out.finish_reason;
  e.n_prompt = out.n_prompt_tokens;
  e.n_output = out.n_output_tokens;
  e.n_cached = out.n_cached_tokens;
  e.error = out.error;
  e.error_kind = out.error_kind;
  if (out.finished && !c.finished) {
    c.finished = true;
    ctx_.metrics->count_finished(out.finish_reason, !out.error.empty(), seconds(now - t_start_));
    ctx_.n_in_flight->fetch_sub(1);
  }
  events_.push_back(std::move(e));
  cv_.notify_all();
  lock.unlock();
  if (notify_) notify_();
}

std::deque<CompletionJob::Event> CompletionJob::take_events(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::deque<Event> out;
  out.swap(events_);
  return out;
}

void CompletionJob::apply(const Event& e) {
  Choice& c = choices_[size_t(e.choice)];
  if (e.n_new_ids > 0) {
    if (!c.got_first) {
      ctx_.metrics->observe_ttft(seconds(e.t - t_start_));
      c.got_first = true;
    } else {
      ctx_.metrics->observe_itl(seconds(e.t - c.t_last), e.n_new_ids);
    }
    c.t_last = e.t;
  }
  c.text += e.new_text;
  c.n_prompt = e.n_prompt;
  c.n_output = e.n_output;
  c.n_cached = e.n_cached;
  if (e.finished) {
    c.finish = e.finish;
    ++n_finished_events_;
    if (!e.error.empty() && first_error_.empty()) first_error_ = e.error, first_error_kind_ = e.error_kind;
  }
}

Usage CompletionJob::usage() const {
  Usage u;
  // The prompt counts once per prompt, not once per sample (as OpenAI counts n).
  for (size_t k = 0; k < choices_.size(); ++k) {
    if (k % size_t(request_.n) == 0) {
      u.prompt_tokens += choices_[k].n_prompt;
      u.cached_tokens += choices_[k].n_cached;
    }
    u.completion_tokens += choices_[k].n_output;
  }
  return u;
}

nlohmann::json CompletionJob::wait_response() {
  for (;;)
    if (auto body = poll_response(std::chrono::milliseconds(1000))) return *body;
}

std::optional<nlohmann::json> CompletionJob::poll_response(std::chrono::milliseconds timeout) {
  for (const Event& e : take_events(timeout)) apply(e);
  if (n_finished_events_ < int(choices_.size())) return std::nullopt;
  if (!first_error_.empty()) throw ApiError(500, error_message(first_error_kind_, first_error_));
  std::vector<ChoiceResult> results;
  for (const Choice& c : choices_) results.push_back(ChoiceResult{c.text, c.finish});
  return response_body(header_, results, usage());
}

bool CompletionJob::stream(const std::function<bool(const std::string&)>& write) {
  std::string buf;
  for (;;) {
    const bool done = poll_stream(buf, std::chrono::milliseconds(500));
    if (!buf.empty() && !write(buf)) {
      abort_unfinished();
      return false;
    }
    buf.clear();
    if (done) return true;
  }
}

bool CompletionJob::poll_stream(std::string& buf, std::chrono::milliseconds timeout) {
  const bool usage_on = request_.include_usage;
  if (!stream_started_) {
    stream_started_ = true;
    if (request_.kind == ApiKind::chat)
      for (size_t k = 0; k < choices_.size(); ++k)
        buf += sse_event(stream_chunk(header_, int(k), "", FinishReason::none, true, usage_on));
  }
  if (n_finished_events_ >= int(choices_.size())) return true;  // [DONE] already written
  for (const Event& e : take_events(timeout)) {
    apply(e);
    if (!e.error.empty()) {
      buf += sse_event(ApiError::error_body(error_message(e.error_kind, e.error), "internal_server_error", "", ""));
    } else if (!e.new_text.empty() || e.finished) {
      buf += sse_event(
          stream_chunk(header_, e.choice, e.new_text, e.finished ? e.finish : FinishReason::none, false, usage_on));
    }
  }
  if (n_finished_events_ < int(choices_.size())) return false;
  if (usage_on) buf += sse_event(usage_chunk(header_, usage()));
  buf += "data: [DONE]\n\n";
  return true;
}

void CompletionJob::abort_unfinished() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Choice& c : choices_)
      if (c.submitted && !c.finished) ids.push_back(c.engine_id);
  }
  for (uint64_t id : ids) ctx_.engine->abort(id);
}

bool CompletionJob::all_finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Choice& c : choices_)
    if (c.submitted && !c.finished) return false;
  return true;
}

}  // namespace seam
