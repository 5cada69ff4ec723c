// ToolCallParser: finds the tool calls a model writes in its output text, as
// sglang's --tool-call-parser detectors do, incrementally on the detokenized
// stream. feed(delta) returns the content that is certainly not part of a call
// and the calls completed so far; finish() flushes what is held back at the end.
//
// Invariants (tests/tool_call_parser_test.cpp checks them at every split of a
// stream): the concatenated deltas of any split equal the one-shot parse; no
// part of a call marker ever reaches content unless the text around it turns
// out not to be a call, in which case the whole raw text is content.
// Whitespace (and ';', Llama's separator) between calls and after the last one
// is not content; nor is whitespace before a call at the start of the output.
// A call's arguments come as one fragment once the call is complete.
//
// Formats (sglang's names):
//   llama3     Llama 3.x: the output starts with JSON `{"name": N, "parameters"|"arguments": {...}}`
//              (several separated by ';'), or `<|python_tag|>` followed by such JSON
//   hermes     `<tool_call>{"name": N, "arguments": {...}}</tool_call>` (Hermes, Qwen 2.5/3)
//   qwen25     same as hermes
//   mistral    `[TOOL_CALLS] [{"name": N, "arguments": {...}}, ...]`
//   deepseekv3 `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>`
//   deepseekv31 `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>`
//   kimi_k2    `<|tool_calls_section_begin|><|tool_call_begin|>functions.N:0<|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>`
//   qwen3_coder `<tool_call><function=N><parameter=K>V</parameter>...</function></tool_call>`
//   glm45      `<tool_call>N\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...</tool_call>` (glm47: no \n after N)
//              (these two: each V is raw text, typed by the request's tools: tool_call_formats.h)
//   pythonic   `[f(a=1, b="x"), g()]` at the start of the output or after <|python_start|> (Llama 3.2 / 4)
#pragma once
#include <memory>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace seam {

// One OpenAI tool-call delta. A call's first delta has its id and name (and
// arguments ""); later deltas of the same index carry argument fragments.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // "call_..." on the first delta, else empty
  std::string name;  // on the first delta, else empty
  std::string arguments;
};

struct ToolParseDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
  void append(ToolParseDelta&& other);
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  ToolParseDelta feed(std::string_view text);
  ToolParseDelta finish();
  int n_calls() const { return n_calls_; }

 protected:
  // One parsed call: its name and its arguments as JSON text.
  struct Call {
    std::string name;
    std::string arguments;
  };
  // In content: where the start of a call region begins in `buf` (npos: none),
  // and the bytes of its marker; `held` gets how many trailing bytes might
  // still become a marker (held back from content).
  virtual size_t find_start(std::string_view buf, bool at_output_start, size_t& marker_len, size_t& held) const = 0;
  // In a call region (marker consumed): parses calls from `buf`. Returns the
  // bytes consumed and sets `done` when the region ended; returns 0 without
  // `done` to wait for more text. Sets `failed` when the region is not a call
  // (its raw text then becomes content). At `final` it must decide.
  virtual size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                              bool& failed) const = 0;

 private:
  ToolParseDelta run(bool final);
  void emit(ToolParseDelta& out, std::vector<Call>& calls);

  std::string buf_;            // text not yet decided
  std::string region_raw_;     // the raw text of the current call region (content if it fails)
  std::vector<Call> pending_;  // calls of the region not yet emitted
  bool in_region_ = false;
  bool at_output_start_ = true;  // nothing but whitespace seen
  bool skip_ws_ = false;         // after a call region: whitespace before the next text is dropped
  int n_calls_ = 0;
  std::string id_prefix_;
};

// The parser named `name` (one of tool_call_parser_names()); throws seam::Error otherwise.
// `tools`: the request's tools, which the formats with raw-text parameter values (qwen3_coder,
// glm45, glm47) read the parameters' types from.
std::unique_ptr<ToolCallParser> make_tool_call_parser(const std::string& name,
                                                      const nlohmann::ordered_json& tools = nlohmann::ordered_json());
const std::vector<std::string>& tool_call_parser_names();

// Helpers shared by the formats (tool_call_formats.cpp).
namespace tool_call_detail {
// The end of the JSON object or array starting at the first non-space byte of
// `s` (npos when incomplete or when `s` starts otherwise); string-aware.
size_t json_value_end(std::string_view s);
// The length of the longest suffix of `buf` that is a proper prefix of `marker`.
size_t partial_suffix(std::string_view buf, std::string_view marker);
// Call ids: "call_" + 24 hex digits, a random prefix per response choice (16) then the
// call's index (8), so ids are unique in a response.
std::string random_id_prefix();
std::string call_id(const std::string& prefix, int index);
}  // namespace tool_call_detail

}  // namespace seam
