// JSON Schema (and OpenAI's response_format json_object) to the grammar IR.
//
// Enforced: type (one or a list; inferred from the keywords when missing),
// properties / required / additionalProperties (false, true or a schema),
// items / prefixItems (a tuple, then "items" for the rest; whole unless
// minItems asks for fewer) / minItems / maxItems, enum, const, anyOf, oneOf (when
// its branches are provably disjoint: different types, different const/enum
// values or a required discriminator property with disjoint values -- a
// choice cannot enforce exactly-one otherwise), allOf (merged into one schema
// where the merge is exact: schema_all_of.h), $ref to
// "#", "#/$defs/..", "#/definitions/.." and other local JSON pointers
// (recursion included), string pattern / minLength / maxLength / format
// (date, time, date-time, email, uuid, ipv4), integer minimum / maximum /
// exclusiveMinimum / exclusiveMaximum, number bounds of any kind (plain decimals
// within them: decimal_range.h), null, boolean.
// Annotations (title, description, default, examples, $schema, $id, $comment,
// deprecated, readOnly, writeOnly) and unknown keywords are ignored (a
// validator ignores them too). Anything else a schema asks for is a seam::Error
// "unsupported JSON Schema keyword '<k>' at <path>": the grammar never accepts
// what the schema rejects (it may be stricter: properties come in the order
// the schema lists them, numbers and literals in their compact form).
//
// Whitespace: compact JSON with at most one space after ',' and ':' (what
// OpenAI-style outputs look like), or with any_whitespace, any run of
// [ \t\n\r] between tokens (xgrammar's default).
#pragma once
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

struct JsonSchemaOptions {
  bool any_whitespace = false;
  // A schema without additionalProperties gets no properties beyond those it
  // lists (OpenAI strict mode, xgrammar's default); false: any others allowed.
  bool strict_properties = true;
};

Grammar json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
// Parses the schema text first (a parse error is a seam::Error too).
Grammar json_schema_to_grammar(std::string_view schema_text, const JsonSchemaOptions& options = {});
// Any JSON object ({"type": "json_object"} mode).
Grammar json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace seam::grammar
