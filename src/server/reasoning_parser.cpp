#include "server/reasoning_parser.h"

#include "core/error.h"
#include "server/tool_call_parser.h"

namespace seam {

namespace {
constexpr std::string_view k_open = "<think>";
constexpr std::string_view k_close = "</think>";
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
}  // namespace

ReasoningParser::ReasoningParser(bool starts_in_reasoning) : starts_in_reasoning_(starts_in_reasoning) {}

ReasoningDelta ReasoningParser::feed(std::string_view text) {
  buf_.append(text);
  return run(false);
}

ReasoningDelta ReasoningParser::finish() { return run(true); }

ReasoningDelta ReasoningParser::run(bool final) {
  ReasoningDelta out;
  for (;;) {
    if (state_ == State::start) {
      // Is the output's start the opening tag? Wait while it may still be.
      const size_t n = std::min(buf_.size(), k_open.size());
      if (!final && buf_.size() < k_open.size() && std::string_view(buf_) == k_open.substr(0, n)) break;
      const bool opened = std::string_view(buf_).substr(0, k_open.size()) == k_open;
      if (opened) buf_.erase(0, k_open.size());
      state_ = opened || starts_in_reasoning_ ? State::reasoning : State::content;
      if (state_ == State::reasoning) saw_reasoning_ = true;
      continue;
    }
    if (state_ == State::reasoning) {
      const size_t p = buf_.find(k_close);
      if (p == std::string::npos) {
        const size_t held = final ? 0 : tool_call_detail::partial_suffix(buf_, k_close);
        out.reasoning += buf_.substr(0, buf_.size() - held);
        buf_.erase(0, buf_.size() - held);
        break;
      }
      out.reasoning += buf_.substr(0, p);
      buf_.erase(0, p + k_close.size());
      state_ = State::content;
      skip_ws_ = true;
      continue;
    }
    if (skip_ws_) {
      size_t k = 0;
      while (k < buf_.size() && is_space(buf_[k])) ++k;
      buf_.erase(0, k);
      if (buf_.empty()) break;
      skip_ws_ = false;
    }
    out.content += buf_;
    buf_.clear();
    break;
  }
  return out;
}

void check_reasoning_parser_name(const std::string& name) {
  if (name != "deepseek-r1" && name != "qwen3")
    throw Error("--reasoning-parser: unknown parser '" + name + "' (one of deepseek-r1, qwen3)");
}

std::unique_ptr<ReasoningParser> make_reasoning_parser(const std::string& name, bool separate_reasoning,
                                                       bool enable_thinking) {
  check_reasoning_parser_name(name);
  if (!separate_reasoning) return nullptr;
  if (name == "qwen3" && !enable_thinking) return nullptr;
  return std::make_unique<ReasoningParser>(name == "deepseek-r1");
}

}  // namespace seam
