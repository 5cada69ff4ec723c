// CompletionJob: one /v1/completions or /v1/chat/completions request on its
// way through the engine. The HTTP thread prepares it (template, tokenize,
// check against the model), submits one engine request per choice, then either
// waits for the whole answer or streams chunks. Engine callbacks (on the engine
// thread) only append to the job's queue under its mutex and notify; the HTTP
// thread drains the queue and does all the formatting and writing.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/chat_output.h"
#include "server/chat_template.h"
#include "server/logprobs_json.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_metrics.h"

namespace seam {

// What a job needs from the server. Everything here outlives every job's
// engine requests (the engine is destroyed, or idle, before the server).
struct ServerContext {
  Engine* engine = nullptr;
  const ChatTemplate* chat_template = nullptr;
  std::vector<int32_t> chat_stop_ids;  // end-of-turn tokens of the chat template
  ServerMetrics* metrics = nullptr;
  std::atomic<int64_t>* n_in_flight = nullptr;  // engine requests not finished (a gauge of /metrics)
  std::string model_name;
  std::string tool_call_parser;  // --tool-call-parser (empty: none)
  std::string reasoning_parser;  // --reasoning-parser (empty: none)
};

class CompletionJob : public std::enable_shared_from_this<CompletionJob> {
 public:
  CompletionJob(const ServerContext& ctx, ApiRequest request);
  ~CompletionJob();

  // Renders and tokenizes every prompt, then submits every choice as one group
  // (the engine validates and admits it). Throws ApiError: 400 for input the
  // model cannot take, 503 with Retry-After when the engine is at
  // --max-queued-requests, 500 when the engine is dead. Nothing stays
  // submitted after a throw.
  void submit();

  // Blocks until every choice finished; the response body. Throws ApiError(500)
  // when the engine failed a choice.
  nlohmann::json wait_response();

  // For an event-driven server: `notify` runs on the engine thread after each
  // new event (it must only post work elsewhere). Set before submit().
  void set_notify(std::function<void()> notify) { notify_ = std::move(notify); }
  // Drains events without blocking (or up to `timeout`): the response body
  // once every choice finished, else nullopt. Throws as wait_response().
  std::optional<nlohmann::json> poll_response(std::chrono::milliseconds timeout = {});
  // Drains events (up to `timeout`) and appends their SSE text to `out`; true
  // once every choice finished and "data: [DONE]" was appended.
  bool poll_stream(std::string& out, std::chrono::milliseconds timeout = {});

  // Streams SSE events through `write` (false: the client is gone) until every
  // choice finished and "data: [DONE]" is written. Returns false when a write
  // failed; the unfinished choices are then aborted.
  bool stream(const std::function<bool(const std::string&)>& write);

  // Aborts every choice that has not finished (client gone, server stopping).
  void abort_unfinished();
  bool all_finished() const;

 private:
  struct Choice {
    uint64_t engine_id = 0;
    bool submitted = false;
    bool finished = false;  // as seen by the engine thread
    // Drained side (HTTP thread).
    bool got_first = false;
    std::chrono::steady_clock::time_point t_last;
    std::string text;
    FinishReason finish = FinishReason::none;
    int n_prompt = 0, n_output = 0, n_cached = 0;
    // Logprobs (when asked): the formatter's state, and for a whole response the result.
    std::unique_ptr<LogprobsJson> lp_format;
    nlohmann::json logprobs;
    bool echoed = false;  // the echoed prompt (text, logprobs) is out
    // Chat with a reasoning or tool-call parser: the text split as it arrives.
    std::shared_ptr<ChatOutput> output;
    ChatOutputDelta last_delta;  // of the last applied event
  };
  struct Event {
    int choice = 0;
    std::chrono::steady_clock::time_point t;  // when the engine emitted it
    size_t n_new_ids = 0;
    std::string new_text;
    bool finished = false;
    FinishReason finish = FinishReason::none;
    int n_prompt = 0, n_output = 0, n_cached = 0;
    std::string error;
    ErrorKind error_kind = ErrorKind::none;
    std::vector<TokenLogprob> new_logprobs;
    std::vector<TokenLogprob> prompt_logprobs;
  };

  void on_output(int choice, const RequestOutput& out);  // engine thread
  std::deque<Event> take_events(std::chrono::milliseconds timeout);
  // Applies an event to its choice; the text and logprobs it adds go to chunk_text / chunk_logprobs,
  // and a choice with output parsers gets the event's parsed delta in last_delta.
  void apply(const Event& e, std::string* chunk_text = nullptr, nlohmann::json* chunk_logprobs = nullptr);
  // The choice's text and logprobs this event adds (with the echoed prompt before the first);
  // `chunk_logprobs` gets the event's logprobs alone (for a stream chunk).
  std::string take_echo_and_logprobs(const Event& e, nlohmann::json* chunk_logprobs);
  // The chat output parsers of one choice (chat_output.h), or null when the request needs none.
  std::shared_ptr<ChatOutput> make_chat_output() const;
  Usage usage() const;
  // The API's name for an engine request field ("max_new_tokens" -> "max_tokens", ...).
  std::string api_param(const std::string& engine_param) const;

  const ServerContext ctx_;
  ApiRequest request_;
  ResponseHeader header_;
  std::vector<std::vector<int32_t>> prompt_ids_;  // [n_prompts][n_prompt_tokens]
  std::vector<std::string> prompt_texts_;         // [n_prompts] with echo: the text echoed
  std::vector<Choice> choices_;                   // [n_prompts * n]
  std::chrono::steady_clock::time_point t_start_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  int n_finished_events_ = 0;  // drained side
  std::string first_error_;
  ErrorKind first_error_kind_ = ErrorKind::none;
  std::function<void()> notify_;
  bool stream_started_ = false;  // drained side
};

}  // namespace seam
