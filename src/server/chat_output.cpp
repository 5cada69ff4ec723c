#include "server/chat_output.h"

namespace seam {

using json = nlohmann::json;

void ChatOutputDelta::append(ChatOutputDelta&& other) {
  reasoning += other.reasoning;
  content += other.content;
  for (ToolCallDelta& d : other.tool_calls) tool_calls.push_back(std::move(d));
}

ChatOutput::ChatOutput(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolCallParser> tools)
    : reasoning_(std::move(reasoning)), tools_(std::move(tools)) {}

ChatOutput::ChatOutput(std::unique_ptr<ForcedToolCalls> forced) : forced_(std::move(forced)) {}

ChatOutputDelta ChatOutput::split(ReasoningDelta r, bool final) {
  ChatOutputDelta d;
  d.reasoning = std::move(r.reasoning);
  if (forced_) {
    ToolParseDelta t = forced_->feed(r.content);
    if (final) t.append(forced_->finish());
    d.content = std::move(t.content);
    d.tool_calls = std::move(t.calls);
  } else if (tools_) {
    ToolParseDelta t = tools_->feed(r.content);
    if (final) t.append(tools_->finish());
    d.content = std::move(t.content);
    d.tool_calls = std::move(t.calls);
  } else {
    d.content = std::move(r.content);
  }
  accumulate(d);
  return d;
}

ChatOutputDelta ChatOutput::feed(std::string_view text) {
  if (reasoning_) return split(reasoning_->feed(text), false);
  return split(ReasoningDelta{"", std::string(text)}, false);
}

ChatOutputDelta ChatOutput::finish() {
  if (reasoning_) return split(reasoning_->finish(), true);
  return split(ReasoningDelta{}, true);
}

void ChatOutput::accumulate(const ChatOutputDelta& d) {
  reasoning_text_ += d.reasoning;
  content_ += d.content;
  for (const ToolCallDelta& c : d.tool_calls) {
    if (size_t(c.index) >= calls_.size()) calls_.resize(size_t(c.index) + 1);
    ToolCall& call = calls_[size_t(c.index)];
    if (!c.id.empty()) call.id = c.id;
    call.name += c.name;
    call.arguments += c.arguments;
  }
}

json ChatOutput::message_json() const {
  json m;
  m["role"] = "assistant";
  const bool reasoned = reasoning_ && reasoning_->saw_reasoning();
  if (content_.empty() && (!calls_.empty() || reasoned)) {
    m["content"] = nullptr;
  } else {
    m["content"] = content_;
  }
  if (reasoned) m["reasoning_content"] = reasoning_text_;
  if (!calls_.empty()) {
    json arr = json::array();
    for (const ToolCall& c : calls_)
      arr.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(arr);
  }
  return m;
}

json chat_delta_json(const ChatOutputDelta& d) {
  json j = json::object();
  if (!d.reasoning.empty()) j["reasoning_content"] = d.reasoning;
  if (!d.content.empty()) j["content"] = d.content;
  if (!d.tool_calls.empty()) {
    json arr = json::array();
    for (const ToolCallDelta& c : d.tool_calls) {
      json e = {{"index", c.index}};
      if (!c.id.empty()) {
        e["id"] = c.id;
        e["type"] = "function";
        e["function"] = {{"name", c.name}, {"arguments", c.arguments}};
      } else {
        e["function"] = {{"arguments", c.arguments}};
      }
      arr.push_back(std::move(e));
    }
    j["tool_calls"] = std::move(arr);
  }
  return j;
}

json chat_finish_reason_json(FinishReason r, bool has_tool_calls) {
  if (r == FinishReason::none) return nullptr;
  if (has_tool_calls && (r == FinishReason::stop || r == FinishReason::length)) return "tool_calls";
  return finish_reason_name(r);
}

}  // namespace seam
