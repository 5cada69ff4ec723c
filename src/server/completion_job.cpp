#include "server/completion_job.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <malloc.h>
#include <optional>
#include <random>

#include "core/log.h"
#include "server/api_error.h"
#include "server/request_log.h"

namespace seam {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "cmpl-" + 24 hex digits: random per process, then a counter (unique, cheap).
std::string make_response_id(ApiKind kind) {
  static const uint64_t prefix = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ uint64_t(std::time(nullptr));
  static std::atomic<uint64_t> counter{0};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", (unsigned long long)prefix,
                (unsigned long long)(counter.fetch_add(1) & 0xffffffffull));
  return std::string(kind == ApiKind::chat ? "chatcmpl-" : "cmpl-") + buf;
}

constexpr size_t k_trim_after_bytes = size_t(1) << 20;

// A prompt can hold at most max_context - 1 ids (one position is left to
// generate). Tokenization stops there, and a text too long by its length
// alone is refused before any of it is tokenized (Tokenizer::encode_at_most).
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const std::string& text, bool add_special, int max_context,
                                   const char* field) {
  const size_t max_ids = size_t(std::max(max_context - 1, 0));
  std::optional<std::vector<int32_t>> ids = tok.encode_at_most(text, add_special, max_ids);
  // A long text that was tokenized (it could not be refused by its length)
  // leaves large freed blocks in the heap: give them back to the system.
  if (text.size() >= k_trim_after_bytes) malloc_trim(0);
  if (!ids)
    throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                          " tokens. However, the prompt has more than " + std::to_string(max_ids) + " tokens (" +
                          std::to_string(text.size()) + " bytes). Reduce the prompt.",
                      field);
  return std::move(*ids);
}

}  // namespace

CompletionJob::CompletionJob(const ServerContext& ctx, ApiRequest request)
    : ctx_(ctx), request_(std::move(request)), t_start_(Clock::now()) {
  header_.kind = request_.kind;
  header_.id = make_response_id(request_.kind);
  header_.created = int64_t(std::time(nullptr));
  header_.model = ctx_.model_name;
}

CompletionJob::~CompletionJob() {
  // Choices never submitted give their reserved slots back here; submitted
  // ones gave theirs back when the engine finished them.
  if (n_reserved_ > 0) ctx_.n_in_flight->fetch_sub(n_reserved_);
}

void CompletionJob::submit() {
  Engine& engine = *ctx_.engine;
  const Tokenizer& tok = engine.tokenizer();
  const int vocab = engine.model_config().vocab_size;
  const int max_context = engine.max_context();

  // Prompts -> token ids.
  std::vector<std::string> logged_prompts;  // only for --log-requests-level >= 2
  const bool log_prompts = log::request_log_level() >= 2;
  if (request_.kind == ApiKind::chat) {
    std::string text;
    try {
      text = ctx_.chat_template->render(request_.messages, true);
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw bad_request(e.what(), "messages");
    }
    prompt_ids_.push_back(encode_prompt(tok, text, !ctx_.chat_template->writes_bos(), max_context, "messages"));
    if (log_prompts) logged_prompts.push_back(std::move(text));
  } else {
    for (const PromptInput& p : request_.prompts) {
      if (!p.is_ids) {
        prompt_ids_.push_back(encode_prompt(tok, p.text, true, max_context, "prompt"));
        if (log_prompts) logged_prompts.push_back(p.text);
        continue;
      }
      for (int32_t id : p.ids)
        if (id >= vocab)
          throw bad_request("prompt token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(vocab),
                            "prompt");
      prompt_ids_.push_back(p.ids);
    }
  }

  // Checks against the model, per prompt.
  SamplingParams params = request_.params;
  if (request_.kind == ApiKind::chat)
    params.stop_token_ids.insert(params.stop_token_ids.end(), ctx_.chat_stop_ids.begin(), ctx_.chat_stop_ids.end());
  std::vector<SamplingParams> per_prompt;
  for (const auto& ids : prompt_ids_) {
    const int n_prompt = int(ids.size());
    if (n_prompt == 0) throw bad_request("the prompt is empty (no tokens)", "prompt");
    SamplingParams p = params;
    if (request_.kind == ApiKind::chat && !request_.max_tokens_given) p.max_new_tokens = max_context - n_prompt;
    if (n_prompt >= max_context || int64_t(n_prompt) + p.max_new_tokens > max_context)
      throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                            " tokens. However, you requested " + std::to_string(int64_t(n_prompt) + p.max_new_tokens) +
                            " tokens (" + std::to_string(n_prompt) + " in the prompt, " +
                            std::to_string(p.max_new_tokens) + " for the completion). Reduce the prompt or max_tokens.",
                        request_.kind == ApiKind::chat ? "messages" : "max_tokens");
    try {
      p.validate(vocab);
    } catch (const Error& e) {
      throw bad_request(e.what());
    }
    per_prompt.push_back(std::move(p));
  }

  // Admission: reserve every choice at once, or refuse the request.
  const int64_t n = int64_t(prompt_ids_.size()) * request_.n;
  if (ctx_.max_queued_requests > 0) {
    int64_t cur = ctx_.n_in_flight->load();
    do {
      if (cur + n > ctx_.max_queued_requests)
        throw ApiError(503,
                       "server overloaded: " + std::to_string(cur) + " requests in flight, the limit is " +
                           std::to_string(ctx_.max_queued_requests) + " (--max-queued-requests); retry later",
                       "", "server_overloaded", "server_overloaded");
    } while (!ctx_.n_in_flight->compare_exchange_weak(cur, cur + n));
  } else {
    ctx_.n_in_flight->fetch_add(n);
  }
  n_reserved_ = n;
  log_request_accepted(header_.id, request_.kind == ApiKind::chat ? "chat" : "completion", logged_prompts, prompt_ids_,
                       request_.n, per_prompt.front());

  choices_.resize(size_t(n));
  auto self = shared_from_this();
  for (size_t pi = 0; pi < prompt_ids_.size(); ++pi) {
    for (int j = 0; j < request_.n; ++j) {
      const int k = int(pi) * request_.n + j;
      SamplingParams p = per_prompt[pi];
      if (p.seed) p.seed = *p.seed + uint64_t(j);  // n samples of one prompt differ
      try {
        const uint64_t id = engine.submit(prompt_ids_[pi], p, [self, k](const RequestOutput& o) { self->on_output(k, o); });
        std::lock_guard<std::mutex> lock(mu_);
        choices_[size_t(k)].engine_id = id;
        choices_[size_t(k)].submitted = true;
        --n_reserved_;  // the engine's finish callback returns it
      } catch (const Error& e) {
        abort_unfinished();
        throw bad_request(e.what());
      }
    }
  }
}

// On the engine thread, once per request per step: a time stamp, a queue
// append and a notify. Latency metrics are observed later by the HTTP thread
// from the stamps; only a request's end is counted here, so that requests
// whose client went away (nobody drains them) are still counted.
void CompletionJob::on_output(int k, const RequestOutput& out) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
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
  if (out.finished && !c.finished) {
    c.finished = true;
    log_request_finished(header_.id, k, out);
    ctx_.metrics->count_finished(out.finish_reason, !out.error.empty(), seconds(now - t_start_));
    ctx_.n_in_flight->fetch_sub(1);
  }
  events_.push_back(std::move(e));
  cv_.notify_all();
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
    if (!e.error.empty() && first_error_.empty()) first_error_ = e.error;
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
  while (n_finished_events_ < int(choices_.size()))
    for (const Event& e : take_events(std::chrono::milliseconds(1000))) apply(e);
  if (!first_error_.empty()) throw ApiError(500, "the engine failed the request: " + first_error_);
  std::vector<ChoiceResult> results;
  for (const Choice& c : choices_) results.push_back(ChoiceResult{c.text, c.finish});
  return response_body(header_, results, usage());
}

bool CompletionJob::stream(const std::function<bool(const std::string&)>& write) {
  const bool usage_on = request_.include_usage;
  std::string buf;
  if (request_.kind == ApiKind::chat)
    for (size_t k = 0; k < choices_.size(); ++k)
      buf += sse_event(stream_chunk(header_, int(k), "", FinishReason::none, true, usage_on));
  while (n_finished_events_ < int(choices_.size())) {
    for (const Event& e : take_events(std::chrono::milliseconds(500))) {
      apply(e);
      if (!e.error.empty()) {
        buf += sse_event(ApiError::error_body("the engine failed the request: " + e.error, "internal_server_error",
                                              "", ""));
      } else if (!e.new_text.empty() || e.finished) {
        buf += sse_event(
            stream_chunk(header_, e.choice, e.new_text, e.finished ? e.finish : FinishReason::none, false, usage_on));
      }
    }
    if (!buf.empty()) {
      if (!write(buf)) {
        abort_unfinished();
        return false;
      }
      buf.clear();
    }
  }
  if (usage_on) buf += sse_event(usage_chunk(header_, usage()));
  buf += "data: [DONE]\n\n";
  return write(buf);
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
