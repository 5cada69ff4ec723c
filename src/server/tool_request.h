// The tool and reasoning fields of a chat request, read from the body parsed
// with member order kept (ordered_json), since a template prints tools, tool
// calls, documents and kwargs in the order the client wrote them:
//   tools            [{type: "function", function: {name, description?, parameters?}}]
//   tool_choice      "none" (tools not rendered, no parsing) | "auto" (default,
//                    the --tool-call-parser finds calls) | "required" | a named
//                    function {"type": "function", "function": {"name": X}}: the
//                    last two constrain the output (r.params.constraint, field
//                    "tool_choice"; tool_choice_constraint.h) and need tools; X
//                    must name one of them
//   messages[i]      assistant tool_calls (arguments given as a JSON string reach
//                    the template as an object, as vLLM passes them), tool
//                    messages' tool_call_id and name
//   documents, chat_template_kwargs, separate_reasoning (default true)
// Every problem is ApiError(400) naming the field.
#pragma once
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace seam {

// Fills r's tool fields, documents, chat_template_kwargs and separate_reasoning
// from `body`; r.messages must already be read (one per body message).
void read_chat_tool_fields(const nlohmann::ordered_json& body, ApiRequest& r);

}  // namespace seam
