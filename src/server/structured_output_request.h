// The structured-output fields of /v1/completions and /v1/chat/completions,
// as the three APIs clients use spell them, read into one OutputConstraint
// (api/output_constraint.h) in r.params.constraint:
//   OpenAI   response_format {"type": "text"}                 no constraint
//                            {"type": "json_object"}          any JSON object
//                            {"type": "json_schema", "json_schema": {"name", "schema", "strict"?, "description"?}}
//   sglang   json_schema (an object or a string of JSON), regex, ebnf
//   vLLM     structured_outputs {json | regex | choice | grammar | json_object,
//                                disable_any_whitespace?, disable_fallback?, disable_additional_properties?}
//            and the older guided_json, guided_regex, guided_choice, guided_grammar
//            (guided_decoding_backend is accepted and not used: seam has one backend)
// One constraint per request: a second field (or a named / "required"
// tool_choice, which set the constraint before) is a 400 naming both. Wrongly
// typed or malformed values are 400s naming the field ("response_format.type",
// "structured_outputs.choice[1]", ...). What a field asks that seam does not do
// (a whitespace pattern, structural tags) is a 400 saying so. Whether a schema,
// regex or grammar compiles is the engine's check (a 400 naming the field too).
//
// Whitespace: JSON comes compact (at most one space after ',' and ':') unless
// the client asks for any whitespace: vLLM's structured_outputs with
// disable_any_whitespace explicitly false. Properties a schema does not list
// are refused unless the schema allows them (additionalProperties) -- OpenAI's
// strict mode and xgrammar's default -- except under response_format's
// "strict": false, where the schema's own JSON Schema meaning holds.
#pragma once
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace seam {

// Reads the fields of `body` (parsed with member order kept: a schema's
// properties come out in the order it lists them) into r.params.constraint.
// Throws ApiError(400).
void read_structured_output_fields(const nlohmann::ordered_json& body, ApiRequest& r);

// Whether `body` has any of the fields above (non-null) or guided_decoding_backend.
bool has_structured_output_fields(const nlohmann::json& body);

}  // namespace seam
