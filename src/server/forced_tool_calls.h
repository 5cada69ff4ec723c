// ForcedToolCalls: the output of a forced tool call (tool_choice named or
// "required", tool_choice_constraint.h) read back as OpenAI tool-call deltas,
// incrementally on the detokenized stream (the counterpart of ToolCallParser
// for output that is the call's JSON itself, with no markers):
//   named     the whole output is the arguments of the named function: the
//             first feed gives the call's id and name (arguments ""), every
//             later text is an arguments delta, as it arrives
//   required  the output is a JSON array of {"name": N, "parameters": {...}};
//             each call is given (id and name, then its arguments as one
//             delta, re-dumped compact) once its array item is complete
// The grammar makes the output fit; should it not (a length cut, or an
// engine without constraints), a "required" output with no complete call is
// content at finish(), and a partial last item is dropped. Ids are made as
// ToolCallParser makes them.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "server/tool_call_parser.h"

namespace seam {

class ForcedToolCalls {
 public:
  static std::unique_ptr<ForcedToolCalls> named(std::string function_name);
  static std::unique_ptr<ForcedToolCalls> required();

  ToolParseDelta feed(std::string_view text);
  ToolParseDelta finish();

 private:
  ForcedToolCalls() = default;
  // required: the complete items of buf_ from pos_ on.
  void parse_items(ToolParseDelta& out);
  void emit_call(ToolParseDelta& out, std::string name, std::string arguments);

  std::string name_;       // named: the function; empty: required
  std::string id_prefix_;  // tool_call_parser.h's ids
  int n_calls_ = 0;
  // required
  std::string buf_;      // the whole output so far
  size_t pos_ = 0;       // parsed up to here
  bool opened_ = false;  // the '[' was read
  bool closed_ = false;  // the ']' was read (later text is ignored)
  bool failed_ = false;  // not the expected shape: the rest is not parsed
};

}  // namespace seam
