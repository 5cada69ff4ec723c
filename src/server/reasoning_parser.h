// ReasoningParser: splits a reasoning model's `<think>...</think>` out of its
// output into reasoning_content, incrementally, as sglang's --reasoning-parser.
//   deepseek-r1  the output starts inside the reasoning (the template wrote
//                `<think>`; a `<think>` the model writes itself is dropped):
//                everything up to `</think>` is reasoning
//   qwen3        reasoning only when the output starts with `<think>`; none with
//                the request's enable_thinking false
//   qwen3-thinking  as deepseek-r1 (Qwen3 "Thinking" models: the template opens `<think>`)
//   glm45        as qwen3 (GLM-4.5 / 4.6)
//   kimi         as qwen3 with Kimi's tags `◁think▷` ... `◁/think▷`
// The text after `</think>` is content, its leading whitespace dropped. A
// marker split across deltas is held back until it is decided, so no part of
// it reaches either side.
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace seam {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  // starts_in_reasoning: deepseek-r1 (true) or qwen3 (false); `open` / `close`: the tags.
  explicit ReasoningParser(bool starts_in_reasoning, std::string open = "<think>", std::string close = "</think>");
  ReasoningDelta feed(std::string_view text);
  ReasoningDelta finish();
  // True once any reasoning text was produced or a reasoning block opened.
  bool saw_reasoning() const { return saw_reasoning_; }

 private:
  ReasoningDelta run(bool final);

  enum class State { start, reasoning, content };
  State state_ = State::start;
  bool starts_in_reasoning_;
  bool skip_ws_ = false;  // right after </think>
  bool saw_reasoning_ = false;
  std::string open_, close_;
  std::string buf_;
};

// Throws seam::Error for a name not listed above.
void check_reasoning_parser_name(const std::string& name);
// A parser for `name`, or null when the request turns reasoning off
// (separate_reasoning false; qwen3 / glm45 with enable_thinking false).
std::unique_ptr<ReasoningParser> make_reasoning_parser(const std::string& name, bool separate_reasoning,
                                                       bool enable_thinking);

}  // namespace seam
