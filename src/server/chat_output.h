// ChatOutput: one chat choice's generated text split into reasoning_content,
// content and tool_calls as it streams (reasoning parser first, then the
// tool-call parser on the content after the reasoning; or, for a forced tool
// call, the whole text read as the call), and the OpenAI JSON of the pieces:
// the streaming `delta` and the final `message`.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/finish_reason.h"
#include "server/forced_tool_calls.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace seam {

struct ChatOutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  void append(ChatOutputDelta&& other);
};

// A parsed tool call of the final message.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

class ChatOutput {
 public:
  // Either parser may be null (that part is not parsed).
  ChatOutput(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolCallParser> tools);
  // A forced tool call (tool_choice named or "required"): the whole output is the call's JSON.
  explicit ChatOutput(std::unique_ptr<ForcedToolCalls> forced);
  ChatOutputDelta feed(std::string_view text);
  ChatOutputDelta finish();

  // The accumulated message: {"role": "assistant", "content": ..., "reasoning_content"?, "tool_calls"?};
  // content is null when empty and the message has tool calls or reasoning.
  nlohmann::json message_json() const;
  bool has_tool_calls() const { return !calls_.empty(); }

 private:
  ChatOutputDelta split(ReasoningDelta r, bool final);
  void accumulate(const ChatOutputDelta& d);

  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  std::unique_ptr<ForcedToolCalls> forced_;
  std::string content_, reasoning_text_;
  std::vector<ToolCall> calls_;
};

// The OpenAI streaming delta of `d`: content, reasoning_content and tool_calls
// as present (the first delta of a call: index, id, type, function {name, arguments ""}).
nlohmann::json chat_delta_json(const ChatOutputDelta& d);

// "tool_calls" when the choice made tool calls and ended by stop or length
// (as vLLM reports it), else the engine's reason (null while not finished).
nlohmann::json chat_finish_reason_json(FinishReason engine_reason, bool has_tool_calls);

}  // namespace seam
