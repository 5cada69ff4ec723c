#include "server/completion_job.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>

#include "core/log.h"
#include "server/api_error.h"
#include "server/request_log.h"
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
  std::vector<std::string> logged_prompts;  // only for --log-requests-level >= 2
  const bool log_prompts = log::request_log_level() >= 2;
  if (request_.kind == ApiKind::chat) {
    // A forced call (tool_choice named or "required") is read from its constrained JSON: no parser needed.
    if (!request_.tools.is_null() && request_.tool_choice == "auto" && ctx_.tool_call_parser.empty())
      throw bad_request("tools: this server parses no tool calls (start it with --tool-call-parser NAME), "
                        "or send tool_choice \"none\", \"required\" or a named function",
                        "tools");
    std::string text;
    prompt_ids_.push_back(encode_chat_prompt(*ctx_.chat_template, tok, request_, max_context, &text));
    if (log_prompts) logged_prompts.push_back(std::move(text));
  } else {
    // Token-id prompts are checked by the engine (ids inside the vocabulary).
    for (const PromptInput& p : request_.prompts) {
      if (!p.is_ids) {
        prompt_ids_.push_back(encode_text_prompt(tok, p.text, request_.add_special_tokens, max_context));
        if (log_prompts) logged_prompts.push_back(p.text);
        continue;
      }
      prompt_ids_.push_back(p.ids);
    }
  }

  // The engine validates every request (the ids, the sampling fields, the KV
  // pool) and admits the group or refuses it; the server adds only OpenAI's
  // own rule that prompt + max_tokens fit the context, with OpenAI's message
  // (the engine would instead end the generation at the context length).
  if (request_.echo)
    for (size_t pi = 0; pi < prompt_ids_.size(); ++pi) {
      const PromptInput* in = pi < request_.prompts.size() ? &request_.prompts[pi] : nullptr;
      prompt_texts_.push_back(in && !in->is_ids ? in->text
                                                : tok.decode(prompt_ids_[pi], request_.params.skip_special_tokens));
    }
  SamplingParams params = request_.params;
  if (request_.kind == ApiKind::chat)
    params.stop_token_ids.insert(params.stop_token_ids.end(), ctx_.chat_stop_ids.begin(), ctx_.chat_stop_ids.end());
  // Markers of these formats are special tokens, which detokenizing would drop (vLLM does the same).
  if (!request_.tools.is_null() && request_.tool_choice == "auto" &&
      (ctx_.tool_call_parser == "llama3" || ctx_.tool_call_parser == "mistral"))
    params.skip_special_tokens = false;
  const int64_t n = int64_t(prompt_ids_.size()) * request_.n;
  choices_.resize(size_t(n));
  if (params.logprobs >= 0)
    for (size_t k = 0; k < choices_.size(); ++k) {
      choices_[k].lp_format = std::make_unique<LogprobsJson>(tok);
      const std::vector<int32_t>& prompt = prompt_ids_[k / size_t(request_.n)];
      // Not echoed: the first completion token's text follows the prompt's last token.
      if (!request_.echo && !prompt.empty()) choices_[k].lp_format->set_context(prompt.back());
    }
  for (Choice& c : choices_) c.output = make_chat_output();
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
  log_request_accepted(header_.id, request_.kind == ApiKind::chat ? "chat" : "completion", logged_prompts, prompt_ids_,
                       request_.n, params);
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
  e.new_logprobs = out.new_logprobs;
  e.prompt_logprobs = out.prompt_logprobs;
  if (out.finished && !c.finished) {
    c.finished = true;
    log_request_finished(header_.id, k, out);
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

std::string CompletionJob::take_echo_and_logprobs(const Event& e, nlohmann::json* chunk_logprobs) {
  Choice& c = choices_[size_t(e.choice)];
  std::string text;
  nlohmann::json lp;  // this event's logprobs
  const bool chat = request_.kind == ApiKind::chat;
  if (request_.echo && !c.echoed && e.error.empty()) {
    c.echoed = true;
    const std::string& prompt = prompt_texts_[size_t(e.choice) / size_t(request_.n)];
    text = prompt;
    if (c.lp_format) {
      c.lp_format->append_completion(e.prompt_logprobs, lp);
      c.lp_format->set_text_offset(prompt.size());
    }
  }
  text += e.new_text;
  if (c.lp_format && !e.new_logprobs.empty()) {
    if (chat) {
      nlohmann::json content = lp.is_null() ? nlohmann::json::array() : lp["content"];
      c.lp_format->append_chat(e.new_logprobs, content);
      lp = {{"content", std::move(content)}};
    } else {
      c.lp_format->append_completion(e.new_logprobs, lp);
    }
  }
  if (!lp.is_null()) {
    if (chunk_logprobs) *chunk_logprobs = lp;
    if (!request_.stream) {  // a whole response: the choice's logprobs so far, in order
      if (c.logprobs.is_null()) {
        c.logprobs = std::move(lp);
      } else {
        static const std::vector<const char*> k_chat = {"content"};
        static const std::vector<const char*> k_completion = {"tokens", "token_logprobs", "top_logprobs",
                                                              "text_offset"};
        for (const char* key : chat ? k_chat : k_completion)
          for (auto& x : lp[key]) c.logprobs[key].push_back(std::move(x));
      }
    }
  }
  return text;
}

std::shared_ptr<ChatOutput> CompletionJob::make_chat_output() const {
  if (request_.kind != ApiKind::chat) return nullptr;
  if (request_.tool_choice == "function")
    return std::make_shared<ChatOutput>(ForcedToolCalls::named(request_.tool_choice_name));
  if (request_.tool_choice == "required") return std::make_shared<ChatOutput>(ForcedToolCalls::required());
  std::unique_ptr<ReasoningParser> reasoning;
  // A constrained output starts at its first token: it holds no reasoning to split off (a reasoning
  // parser that expects the text to open inside <think> would take the whole answer for reasoning).
  if (!ctx_.reasoning_parser.empty() && !request_.params.constraint) {
    bool enable_thinking = true;  // the templates' default
    if (auto it = request_.chat_template_kwargs.find("enable_thinking");
        it != request_.chat_template_kwargs.end() && it->is_boolean())
      enable_thinking = it->get<bool>();
    reasoning = make_reasoning_parser(ctx_.reasoning_parser, request_.separate_reasoning, enable_thinking);
  }
  std::unique_ptr<ToolCallParser> tools;
  if (!request_.tools.is_null() && !ctx_.tool_call_parser.empty()) tools = make_tool_call_parser(ctx_.tool_call_parser, request_.tools);
  if (!reasoning && !tools) return nullptr;
  return std::make_shared<ChatOutput>(std::move(reasoning), std::move(tools));
}

void CompletionJob::apply(const Event& e, std::string* chunk_text, nlohmann::json* chunk_logprobs) {
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
  const std::string added = take_echo_and_logprobs(e, chunk_logprobs);
  c.text += added;
  if (chunk_text) *chunk_text = added;
  // The parsers see the generated text only (chat refuses echo, so `added` is the same there).
  if (c.output) {
    c.last_delta = c.output->feed(e.new_text);
    if (e.finished) c.last_delta.append(c.output->finish());
  }
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
  for (const Choice& c : choices_) {
    nlohmann::json lp = c.logprobs;
    if (c.lp_format && lp.is_null()) {  // asked, but no token came: the empty shape
      std::vector<TokenLogprob> none;
      LogprobsJson(ctx_.engine->tokenizer()).append_completion(none, lp);
      if (request_.kind == ApiKind::chat) lp = {{"content", nlohmann::json::array()}};
    }
    ChoiceResult r;
    r.text = c.text;
    r.finish_reason = c.finish;
    r.logprobs = std::move(lp);
    if (c.output) {
      r.message = c.output->message_json();
      r.has_tool_calls = c.output->has_tool_calls();
    }
    results.push_back(std::move(r));
  }
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
    std::string text;
    nlohmann::json lp;
    apply(e, &text, &lp);
    if (!e.error.empty()) {
      buf += sse_event(ApiError::error_body(error_message(e.error_kind, e.error), "internal_server_error", "", ""));
    } else if (const Choice& c = choices_[size_t(e.choice)]; c.output) {
      // A delta the parsers hold back still sends its tokens' logprobs (with an empty delta), so a
      // client that concatenates the chunks' logprobs gets every token once.
      if (!c.last_delta.empty() || e.finished || !lp.is_null())
        buf += sse_event(chat_delta_chunk(header_, e.choice, chat_delta_json(c.last_delta),
                                          chat_finish_reason_json(e.finished ? e.finish : FinishReason::none,
                                                                  c.output->has_tool_calls()),
                                          usage_on, lp));
    } else if (!text.empty() || e.finished || !lp.is_null()) {
      buf += sse_event(
          stream_chunk(header_, e.choice, text, e.finished ? e.finish : FinishReason::none, false, usage_on, lp));
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
