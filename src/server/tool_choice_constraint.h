// The output constraint of a forced tool call, as vLLM builds it:
//   named    {"type": "function", "function": {"name": X}}: the output is the
//            arguments of X, constrained to X's `parameters` schema ({"type":
//            "object"} when the tool has none)
//   required the output is a JSON array (at least one item) of calls
//            {"name": <one tool's name>, "parameters": <its schema>}, anyOf
//            over the tools
// The schema's text keeps the client's member order (a grammar emits
// properties in the order the schema lists them: "name" before "parameters").
// forced_tool_calls.h parses the output back into tool calls.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "api/output_constraint.h"

namespace seam {

// `tools`: the request's checked tool list (tool_request.cpp). `name`: the
// named function, or empty for "required". The constraint's field is "tool_choice".
OutputConstraint tool_choice_constraint(const nlohmann::ordered_json& tools, const std::string& name);

}  // namespace seam
