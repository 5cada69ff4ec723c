// The structured-output fields (server/structured_output_request.h) and the
// forced tool_choice (tool_request.cpp, tool_choice_constraint.h) parsed into
// SamplingParams::constraint: every field and API spelling gives its kind,
// text and field; every malformed, wrongly typed or conflicting value is a 400
// naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace seam {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Kind = OutputConstraint::Kind;

json chat_body() { return {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 4}}; }
json completion_body() { return {{"prompt", "x"}, {"max_tokens", 4}}; }

ApiRequest parse(const std::string& body, ApiKind kind) { return parse_api_request(body, kind); }

// The 400 of `body` (status 0 when accepted).
ApiError error_of(const std::string& body, ApiKind kind) {
  try {
    parse(body, kind);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "accepted");
}

// `body` with `field` = `value` (value as raw JSON text, so member order is the test's).
std::string with(std::string base_text, const std::string& field, const std::string& value_json) {
  base_text.pop_back();
  return base_text + ",\"" + field + "\":" + value_json + "}";
}
std::string with(const json& base, const std::string& field, const std::string& value_json) {
  return with(base.dump(), field, value_json);
}

struct Expect {
  const char* field;
  const char* value;  // JSON text
  Kind kind;
  const char* text;   // the constraint's text
  const char* param;  // the constraint's field
};

TEST(StructuredOutputRequest, EveryFieldGivesItsConstraintOnBothRoutes) {
  const std::vector<Expect> cases = {
      {"response_format", R"({"type": "json_object"})", Kind::json_object, "", "response_format"},
      // The schema's member order is kept (the grammar emits properties in that order).
      {"response_format",
       R"({"type": "json_schema", "json_schema": {"name": "p", "description": "d", "strict": true, "schema": {"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "string"}}}}})",
       Kind::json_schema, R"({"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"string"}}})",
       "response_format"},
      // OpenAI's json_schema without a schema: any object.
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": "p"}})", Kind::json_object, "",
       "response_format"},
      {"json_schema", R"({"type": "object", "properties": {"b": {"type": "null"}}})", Kind::json_schema,
       R"({"type":"object","properties":{"b":{"type":"null"}}})", "json_schema"},
      {"json_schema", R"("{\"type\": \"array\", \"items\": {\"type\": \"boolean\"}}")", Kind::json_schema,
       R"({"type":"array","items":{"type":"boolean"}})", "json_schema"},
      {"regex", R"("[a-z]{3}")", Kind::regex, "[a-z]{3}", "regex"},
      {"ebnf", R"("root ::= \"a\" | \"b\"")", Kind::ebnf, R"(root ::= "a" | "b")", "ebnf"},
      {"guided_json", R"({"type": "string", "maxLength": 4})", Kind::json_schema, R"({"type":"string","maxLength":4})",
       "guided_json"},
      {"guided_json", R"("{\"enum\": [1, 2]}")", Kind::json_schema, R"({"enum":[1,2]})", "guided_json"},
      {"guided_regex", R"("\\d+")", Kind::regex, R"(\d+)", "guided_regex"},
      {"guided_choice", R"(["yes", "no"])", Kind::choice, R"(["yes","no"])", "guided_choice"},
      {"guided_grammar", R"("root ::= [0-9]+")", Kind::ebnf, "root ::= [0-9]+", "guided_grammar"},
      {"structured_outputs", R"({"json": {"type": "integer"}})", Kind::json_schema, R"({"type":"integer"})",
       "structured_outputs.json"},
      {"structured_outputs", R"({"json": "{\"type\": \"integer\"}"})", Kind::json_schema, R"({"type":"integer"})",
       "structured_outputs.json"},
      {"structured_outputs", R"({"regex": "a|b"})", Kind::regex, "a|b", "structured_outputs.regex"},
      {"structured_outputs", R"({"choice": ["x", "y z"]})", Kind::choice, R"(["x","y z"])",
       "structured_outputs.choice"},
      {"structured_outputs", R"({"grammar": "root ::= \"q\""})", Kind::ebnf, R"(root ::= "q")",
       "structured_outputs.grammar"},
      {"structured_outputs", R"({"json_object": true, "disable_fallback": true})", Kind::json_object, "",
       "structured_outputs.json_object"},
  };
  for (const Expect& c : cases)
    for (ApiKind kind : {ApiKind::completion, ApiKind::chat}) {
      const std::string body = with(kind == ApiKind::chat ? chat_body() : completion_body(), c.field, c.value);
      const ApiError err = error_of(body, kind);
      ASSERT_EQ(err.status(), 0) << body << ": " << err.what();
      const ApiRequest r = parse(body, kind);
      ASSERT_TRUE(r.params.constraint.has_value()) << body;
      EXPECT_EQ(r.params.constraint->kind, c.kind) << body;
      EXPECT_EQ(r.params.constraint->text, c.text) << body;
      EXPECT_EQ(r.params.constraint->field, c.param) << body;
      EXPECT_FALSE(r.params.constraint->any_whitespace) << body << ": compact JSON unless asked";
      EXPECT_TRUE(r.params.constraint->strict_properties) << body;
    }
}

TEST(StructuredOutputRequest, NoConstraintWhenNoneIsAsked) {
  for (const char* v : {R"({"type": "text"})", R"({"type": "text", "json_schema": null})", "null"}) {
    const ApiRequest r = parse(with(chat_body(), "response_format", v), ApiKind::chat);
    EXPECT_FALSE(r.params.constraint.has_value()) << v;
  }
  EXPECT_FALSE(parse(completion_body().dump(), ApiKind::completion).params.constraint.has_value());
  // guided_decoding_backend names a backend; seam has one, so it changes nothing.
  const ApiRequest r = parse(with(completion_body(), "guided_decoding_backend", R"("xgrammar")"), ApiKind::completion);
  EXPECT_FALSE(r.params.constraint.has_value());
  const ApiRequest g =
      parse(with(with(completion_body(), "guided_decoding_backend", R"("outlines")"), "guided_regex", R"("a+")"),
            ApiKind::completion);
  ASSERT_TRUE(g.params.constraint.has_value());
  EXPECT_EQ(g.params.constraint->kind, Kind::regex);
}

TEST(StructuredOutputRequest, WhitespaceAndStrictOptions) {
  ApiRequest r = parse(with(chat_body(), "structured_outputs", R"({"json": {"type": "object"}, "disable_any_whitespace": false})"),
                       ApiKind::chat);
  ASSERT_TRUE(r.params.constraint);
  EXPECT_TRUE(r.params.constraint->any_whitespace);
  r = parse(with(chat_body(), "structured_outputs", R"({"json_object": true, "disable_any_whitespace": true})"),
            ApiKind::chat);
  EXPECT_FALSE(r.params.constraint->any_whitespace);
  r = parse(with(chat_body(), "response_format",
                 R"({"type": "json_schema", "json_schema": {"name": "n", "strict": false, "schema": {"type": "object"}}})"),
            ApiKind::chat);
  EXPECT_FALSE(r.params.constraint->strict_properties);
  r = parse(with(chat_body(), "structured_outputs", R"({"json": {}, "disable_additional_properties": false})"),
            ApiKind::chat);
  EXPECT_TRUE(r.params.constraint->strict_properties);
}

struct Bad {
  const char* field;
  const char* value;
  const char* param;
  const char* says;  // a piece of the message
};

TEST(StructuredOutputRequest, MalformedValuesAre400sNamingTheField) {
  const std::vector<Bad> cases = {
      {"response_format", R"("json_object")", "response_format", "must be an object"},
      {"response_format", R"({})", "response_format.type", "required"},
      {"response_format", R"({"type": 1})", "response_format.type", "must be a string"},
      {"response_format", R"({"type": "yaml"})", "response_format.type", "\"yaml\""},
      {"response_format", R"({"type": "structural_tag"})", "response_format.type", "json_schema"},
      {"response_format", R"({"type": "json_object", "schema": {}})", "response_format.schema", "not a field"},
      {"response_format", R"({"type": "json_schema"})", "response_format.json_schema", "required"},
      {"response_format", R"({"type": "json_schema", "json_schema": []})", "response_format.json_schema",
       "an object"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"schema": {}}})", "response_format.json_schema.name",
       "required"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": 3, "schema": {}}})",
       "response_format.json_schema.name", "a string"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": "n", "schema": "{}"}})",
       "response_format.json_schema.schema", "JSON Schema object"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": "n", "strict": "yes", "schema": {}}})",
       "response_format.json_schema.strict", "a boolean"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": "n", "description": 1, "schema": {}}})",
       "response_format.json_schema.description", "a string"},
      {"response_format", R"({"type": "json_schema", "json_schema": {"name": "n", "schemas": {}}})",
       "response_format.json_schema.schemas", "not a field"},
      {"json_schema", "42", "json_schema", "JSON Schema"},
      {"json_schema", R"("{not json")", "json_schema", "not valid JSON"},
      {"json_schema", R"("[1, 2]")", "json_schema", "must hold a JSON Schema object"},
      {"regex", R"(["a"])", "regex", "a string"},
      {"regex", R"("")", "regex", "empty"},
      {"ebnf", "true", "ebnf", "a string"},
      {"guided_json", "[]", "guided_json", "JSON Schema"},
      {"guided_regex", "1", "guided_regex", "a string"},
      {"guided_choice", R"("yes")", "guided_choice", "a list of strings"},
      {"guided_choice", "[]", "guided_choice", "empty"},
      {"guided_choice", R"(["a", 2])", "guided_choice[1]", "a string"},
      {"guided_grammar", "{}", "guided_grammar", "a string"},
      {"guided_decoding_backend", "1", "guided_decoding_backend", "a string"},
      {"guided_whitespace_pattern", R"("[ ]*")", "guided_whitespace_pattern", "whitespace pattern"},
      {"structured_outputs", R"("json")", "structured_outputs", "an object"},
      {"structured_outputs", R"({})", "structured_outputs", "one of json, regex"},
      {"structured_outputs", R"({"json_object": false})", "structured_outputs", "one of json, regex"},
      {"structured_outputs", R"({"regex": "a", "choice": ["b"]})", "structured_outputs.choice", "structured_outputs.regex"},
      {"structured_outputs", R"({"json": 5})", "structured_outputs.json", "JSON Schema"},
      {"structured_outputs", R"({"choice": [1]})", "structured_outputs.choice[0]", "a string"},
      {"structured_outputs", R"({"grammar": 1})", "structured_outputs.grammar", "a string"},
      {"structured_outputs", R"({"json_object": 1})", "structured_outputs.json_object", "a boolean"},
      {"structured_outputs", R"({"regex": "a", "disable_any_whitespace": "no"})",
       "structured_outputs.disable_any_whitespace", "a boolean"},
      {"structured_outputs", R"({"regex": "a", "whitespace_pattern": " *"})", "structured_outputs.whitespace_pattern",
       "not supported"},
      {"structured_outputs", R"({"structural_tag": "{}"})", "structured_outputs.structural_tag", "not supported"},
      {"structured_outputs", R"({"regexp": "a"})", "structured_outputs.regexp", "not a field"},
  };
  for (const Bad& c : cases)
    for (ApiKind kind : {ApiKind::completion, ApiKind::chat}) {
      const std::string body = with(kind == ApiKind::chat ? chat_body() : completion_body(), c.field, c.value);
      const ApiError err = error_of(body, kind);
      EXPECT_EQ(err.status(), 400) << body;
      EXPECT_EQ(err.param(), c.param) << body << ": " << err.what();
      EXPECT_NE(std::string(err.what()).find(c.says), std::string::npos) << body << ": " << err.what();
    }
}

TEST(StructuredOutputRequest, TwoConstraintsAreA400NamingBoth) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"response_format", R"({"type": "json_object"})"},
      {"json_schema", R"({"type": "object"})"},
      {"regex", R"("a")"},
      {"ebnf", R"("root ::= \"a\"")"},
      {"structured_outputs", R"({"regex": "a"})"},
      {"guided_json", R"({"type": "object"})"},
      {"guided_regex", R"("a")"},
      {"guided_choice", R"(["a"])"},
      {"guided_grammar", R"("root ::= \"a\"")"},
  };
  int n_pairs = 0;
  for (size_t a = 0; a < fields.size(); ++a)
    for (size_t b = a + 1; b < fields.size(); ++b) {
      const std::string body = with(with(completion_body(), fields[a].first, fields[a].second), fields[b].first,
                                    fields[b].second);
      const ApiError err = error_of(body, ApiKind::completion);
      EXPECT_EQ(err.status(), 400) << body;
      EXPECT_EQ(err.param(), fields[b].first) << body;
      const std::string m = err.what();
      EXPECT_NE(m.find("'" + fields[a].first + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("'" + fields[b].first + "'"), std::string::npos) << m;
      ++n_pairs;
    }
  EXPECT_EQ(n_pairs, 36);
  // A text response_format asks for nothing, so it goes with any other field.
  EXPECT_EQ(error_of(with(with(completion_body(), "response_format", R"({"type": "text"})"), "regex", R"("a")"),
                     ApiKind::completion)
                .status(),
            0);
}

const char* k_tools =
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "now"}}])";

TEST(StructuredOutputRequest, NamedToolChoiceConstrainsToTheToolsParameters) {
  std::string body = with(with(chat_body(), "tools", k_tools), "tool_choice",
                          R"({"type": "function", "function": {"name": "get_weather"}})");
  ApiRequest r = parse(body, ApiKind::chat);
  EXPECT_EQ(r.tool_choice, "function");
  EXPECT_EQ(r.tool_choice_name, "get_weather");
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->kind, Kind::json_schema);
  EXPECT_EQ(r.params.constraint->field, "tool_choice");
  EXPECT_EQ(r.params.constraint->text,
            R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  // A tool without parameters: any object.
  body = with(with(chat_body(), "tools", k_tools), "tool_choice", R"({"type": "function", "function": {"name": "now"}})");
  r = parse(body, ApiKind::chat);
  EXPECT_EQ(r.params.constraint->text, R"({"type":"object"})");
}

TEST(StructuredOutputRequest, RequiredToolChoiceIsAnArrayOfCallsOfAnyTool) {
  const ApiRequest r = parse(with(with(chat_body(), "tools", k_tools), "tool_choice", R"("required")"), ApiKind::chat);
  EXPECT_EQ(r.tool_choice, "required");
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->field, "tool_choice");
  const ojson schema = ojson::parse(r.params.constraint->text);
  const ojson expected = ojson::parse(R"({"type": "array", "minItems": 1, "items": {"anyOf": [
      {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_weather"]},
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
       "required": ["name", "parameters"]},
      {"type": "object", "properties": {"name": {"type": "string", "enum": ["now"]}, "parameters": {"type": "object"}},
       "required": ["name", "parameters"]}]}})");
  EXPECT_EQ(schema, expected) << schema.dump();
  EXPECT_EQ(schema.dump(), expected.dump()) << "name before parameters";
}

TEST(StructuredOutputRequest, ToolChoiceMistakesAre400s) {
  const std::vector<Bad> cases = {
      {"tool_choice", R"("required")", "tool_choice", "tools"},  // no tools
      {"tool_choice", R"({"type": "function", "function": {"name": "get_weather"}})", "tool_choice", "tools"},
      {"tool_choice", R"("sometimes")", "tool_choice", "\"sometimes\""},
      {"tool_choice", "3", "tool_choice", "a string or an object"},
      {"tool_choice", R"({"type": "tool", "function": {"name": "x"}})", "tool_choice.type", "function"},
      {"tool_choice", R"({"type": "function"})", "tool_choice.function", "an object"},
      {"tool_choice", R"({"type": "function", "function": {"name": 1}})", "tool_choice.function.name", "string"},
  };
  for (const Bad& c : cases) {
    const std::string body = with(chat_body(), c.field, c.value);
    const ApiError err = error_of(body, ApiKind::chat);
    EXPECT_EQ(err.status(), 400) << body;
    EXPECT_EQ(err.param(), c.param) << body << ": " << err.what();
    EXPECT_NE(std::string(err.what()).find(c.says), std::string::npos) << body << ": " << err.what();
  }
  // An unknown name.
  ApiError err = error_of(with(with(chat_body(), "tools", k_tools), "tool_choice",
                               R"({"type": "function", "function": {"name": "get_time"}})"),
                          ApiKind::chat);
  EXPECT_EQ(err.status(), 400);
  EXPECT_EQ(err.param(), "tool_choice.function.name");
  EXPECT_NE(std::string(err.what()).find("get_time"), std::string::npos) << err.what();
  // A forced call and a response format: two constraints.
  for (const char* choice : {R"("required")", R"({"type": "function", "function": {"name": "now"}})"}) {
    err = error_of(with(with(with(chat_body(), "tools", k_tools), "tool_choice", choice), "response_format",
                        R"({"type": "json_object"})"),
                   ApiKind::chat);
    EXPECT_EQ(err.status(), 400) << choice;
    EXPECT_EQ(err.param(), "response_format");
    EXPECT_NE(std::string(err.what()).find("'tool_choice'"), std::string::npos) << err.what();
  }
  // auto and none constrain nothing, so they go with a response format.
  for (const char* choice : {R"("auto")", R"("none")"}) {
    const ApiRequest r = parse(with(with(with(chat_body(), "tools", k_tools), "tool_choice", choice), "regex", R"("a")"),
                               ApiKind::chat);
    ASSERT_TRUE(r.params.constraint);
    EXPECT_EQ(r.params.constraint->field, "regex");
  }
}

}  // namespace
}  // namespace seam
