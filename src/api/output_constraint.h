// OutputConstraint: a request's structured-output constraint (one per request), as the
// server parsed it from whichever field the client used (OpenAI response_format, sglang
// regex / ebnf / json_schema, vLLM structured_outputs / guided_*). The engine compiles it
// (grammar/) when the request is submitted -- on the submitting thread, so a slow compile
// never stalls the engine loop -- and a compile error is a 400 naming `field`.
#pragma once
#include <string>

namespace seam {

struct OutputConstraint {
  enum class Kind {
    json_schema,  // text: the schema, JSON text
    json_object,  // text unused: any JSON object
    regex,        // text: the pattern
    ebnf,         // text: a GBNF / xgrammar EBNF grammar (root rule `root`)
    choice,       // text: a JSON array of strings; the output is exactly one of them
  };
  Kind kind = Kind::json_schema;
  std::string text;
  // The request field it came from ("response_format", "regex", "structured_outputs.json",
  // "tool_choice", ...): the `param` of a 400 when it does not compile.
  std::string field;
  // JSON modes: any run of JSON whitespace between tokens (xgrammar's default) instead of
  // compact JSON with at most one space after ',' and ':'.
  bool any_whitespace = false;
  // JSON Schema: an object schema without additionalProperties allows no other properties
  // (OpenAI strict mode, xgrammar's default). false: others allowed, as the schema says.
  bool strict_properties = true;
};

}  // namespace seam
