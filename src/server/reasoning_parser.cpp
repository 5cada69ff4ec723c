#include "server/reasoning_parser.h"

#include "core/error.h"
#include "server/tool_call_parser.h"

namespace seam {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A parser's name: where its output starts, whether the request's enable_thinking can turn it off,
// and its tags.
struct ReasoningFormat {
  const char* name;
  bool starts_in_reasoning;
  bool follows_enable_thinking;
  const char* open;
  const char* close;
};

const ReasoningFormat k_formats[] = {
    {"deepseek-r1", true, false, "<think>", "</think>"},
    {"qwen3", false, true, "<think>", "</think>"},
    {"qwen3-thinking", true, false, "<think>", "</think>"},
    {"glm45", false, true, "<think>", "</think>"},
    {"kimi", false, false, "\u25c1think\u25b7", "\u25c1/think\u25b7"},
};

const ReasoningFormat* find_format(const std::string& name) {
  for (const ReasoningFormat& f : k_formats)
    if (name == f.name) return &f;
  return nullptr;
}
}  // namespace

ReasoningParser::ReasoningParser(bool starts_in_reasoning, std::string open, std::string close)
    : starts_in_reasoning_(starts_in_reasoning), open_(std::move(open)), close_(std::move(close)) {}

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
      const std::string_view open = open_;
      const size_t n = std::min(buf_.size(), open.size());
      if (!final && buf_.size() < open.size() && std::string_view(buf_) == open.substr(0, n)) break;
      const bool opened = std::string_view(buf_).substr(0, open.size()) == open;
      if (opened) buf_.erase(0, open.size());
      state_ = opened || starts_in_reasoning_ ? State::reasoning : State::content;
      if (state_ == State::reasoning) saw_reasoning_ = true;
      continue;
    }
    if (state_ == State::reasoning) {
      const size_t p = buf_.find(close_);
      if (p == std::string::npos) {
        const size_t held = final ? 0 : tool_call_detail::partial_suffix(buf_, close_);
        out.reasoning += buf_.substr(0, buf_.size() - held);
        buf_.erase(0, buf_.size() - held);
        break;
      }
      out.reasoning += buf_.substr(0, p);
      buf_.erase(0, p + close_.size());
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
  if (find_format(name)) return;
  std::string list;
  for (const ReasoningFormat& f : k_formats) list += (list.empty() ? "" : ", ") + std::string(f.name);
  throw Error("--reasoning-parser: unknown parser '" + name + "' (one of " + list + ")");
}

std::unique_ptr<ReasoningParser> make_reasoning_parser(const std::string& name, bool separate_reasoning,
                                                       bool enable_thinking) {
  check_reasoning_parser_name(name);
  const ReasoningFormat& f = *find_format(name);
  if (!separate_reasoning) return nullptr;
  if (f.follows_enable_thinking && !enable_thinking) return nullptr;
  return std::make_unique<ReasoningParser>(f.starts_in_reasoning, f.open, f.close);
}

}  // namespace seam
