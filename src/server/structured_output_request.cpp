#include "server/structured_output_request.h"

#include <optional>
#include <utility>

#include "core/json_parse.h"
#include "server/api_error.h"

namespace seam {

namespace {

using ojson = nlohmann::ordered_json;
using Kind = OutputConstraint::Kind;

// The top-level fields that ask for a constraint, in the order a conflict names them.
constexpr const char* k_fields[] = {"response_format",    "json_schema", "regex",        "ebnf",
                                    "structured_outputs", "guided_json", "guided_regex", "guided_choice",
                                    "guided_grammar"};

const ojson* find(const ojson& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const char* type_name(const ojson& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

ApiError wrong_type(const std::string& key, const std::string& expected, const ojson& v) {
  return bad_request("'" + key + "' must be " + expected + ", got " + type_name(v), key);
}

std::string read_string(const ojson& v, const std::string& key) {
  if (!v.is_string()) throw wrong_type(key, "a string", v);
  if (v.get_ref<const std::string&>().empty()) throw bad_request("'" + key + "' is empty", key);
  return v.get<std::string>();
}

bool read_bool(const ojson& v, const std::string& key) {
  if (!v.is_boolean()) throw wrong_type(key, "a boolean", v);
  return v.get<bool>();
}

// A JSON Schema: an object, or (where the API allows it) a string holding one.
// Re-dumped from the order-keeping parse, so the properties keep the client's order.
std::string read_schema(const ojson& v, const std::string& key, bool string_allowed) {
  if (string_allowed && v.is_string()) {
    if (json_nesting_depth(v.get<std::string>()) > k_max_json_depth)
      throw bad_request("'" + key + "' nests deeper than " + std::to_string(k_max_json_depth) + " levels", key);
    const ojson parsed = ojson::parse(v.get<std::string>(), nullptr, false);
    if (parsed.is_discarded()) throw bad_request("'" + key + "' is a string that is not valid JSON", key);
    if (!parsed.is_object())
      throw bad_request("'" + key + "' must hold a JSON Schema object, got " + type_name(parsed), key);
    return parsed.dump();
  }
  if (!v.is_object())
    throw wrong_type(key, string_allowed ? "a JSON Schema (an object or a string of JSON)" : "a JSON Schema object", v);
  return v.dump();
}

// vLLM's choice: a non-empty list of strings; the constraint's text is that list as JSON.
std::string read_choice(const ojson& v, const std::string& key) {
  if (!v.is_array()) throw wrong_type(key, "a list of strings", v);
  if (v.empty()) throw bad_request("'" + key + "' is an empty list", key);
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_string()) throw wrong_type(key + "[" + std::to_string(i) + "]", "a string", v[i]);
  return v.dump();
}

OutputConstraint make(Kind kind, std::string text, std::string field) {
  OutputConstraint c;
  c.kind = kind;
  c.text = std::move(text);
  c.field = std::move(field);
  return c;
}

// OpenAI's response_format; nullopt for {"type": "text"}.
std::optional<OutputConstraint> read_response_format(const ojson& v) {
  const std::string key = "response_format";
  if (!v.is_object()) throw wrong_type(key, "an object", v);
  const ojson* type = find(v, "type");
  if (!type) throw bad_request("'response_format.type' is required", "response_format.type");
  const std::string t = type->is_string() ? type->get<std::string>() : "";
  if (!type->is_string()) throw wrong_type("response_format.type", "a string", *type);
  for (auto it = v.begin(); it != v.end(); ++it)
    if (!it->is_null() && it.key() != "type" && !(t == "json_schema" && it.key() == "json_schema"))
      throw bad_request(
          "'response_format." + it.key() + "' is not a field of response_format type \"" + t.substr(0, 32) + "\"",
          "response_format." + it.key());
  if (t == "text") return std::nullopt;
  if (t == "json_object") return make(Kind::json_object, "", key);
  if (t != "json_schema")
    throw bad_request(
        "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"" + t.substr(0, 64) + "\"",
        "response_format.type");
  const ojson* js = find(v, "json_schema");
  if (!js)
    throw bad_request("'response_format.json_schema' is required with type \"json_schema\"",
                      "response_format.json_schema");
  if (!js->is_object()) throw wrong_type("response_format.json_schema", "an object", *js);
  const std::string at = "response_format.json_schema";
  OutputConstraint c = make(Kind::json_schema, "", key);
  bool has_name = false;
  for (auto it = js->begin(); it != js->end(); ++it) {
    const std::string k = it.key();
    if (it->is_null()) continue;
    if (k == "name") {
      read_string(*it, at + ".name");
      has_name = true;
    } else if (k == "description") {
      if (!it->is_string()) throw wrong_type(at + ".description", "a string", *it);
    } else if (k == "schema") {
      c.text = read_schema(*it, at + ".schema", false);
    } else if (k == "strict") {
      // strict (OpenAI's default for structured outputs clients) or absent: no properties beyond the
      // listed ones unless the schema allows them; false: the schema's plain JSON Schema meaning.
      c.strict_properties = read_bool(*it, at + ".strict");
    } else {
      throw bad_request("'" + at + "." + k + "' is not a field of json_schema (name, schema, strict, description)",
                        at + "." + k);
    }
  }
  if (!has_name) throw bad_request("'" + at + ".name' is required", at + ".name");
  // OpenAI allows a json_schema without a schema: any JSON object then.
  if (c.text.empty()) c.kind = Kind::json_object;
  return c;
}

// vLLM's structured_outputs object: exactly one of json, regex, choice, grammar, json_object.
OutputConstraint read_structured_outputs(const ojson& v) {
  const std::string key = "structured_outputs";
  if (!v.is_object()) throw wrong_type(key, "an object", v);
  std::optional<OutputConstraint> c;
  std::string first;
  std::optional<bool> disable_any_whitespace;
  auto set = [&](OutputConstraint next, const std::string& name) {
    if (c)
      throw bad_request(
          "'" + key + "." + first + "' and '" + key + "." + name + "' both ask for structured output; send one",
          key + "." + name);
    c = std::move(next);
    first = name;
  };
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string k = it.key();
    const std::string at = key + "." + k;
    if (it->is_null()) continue;
    if (k == "json") {
      set(make(Kind::json_schema, read_schema(*it, at, true), at), k);
    } else if (k == "regex") {
      set(make(Kind::regex, read_string(*it, at), at), k);
    } else if (k == "choice") {
      set(make(Kind::choice, read_choice(*it, at), at), k);
    } else if (k == "grammar") {
      set(make(Kind::ebnf, read_string(*it, at), at), k);
    } else if (k == "json_object") {
      if (read_bool(*it, at)) set(make(Kind::json_object, "", at), k);
    } else if (k == "disable_any_whitespace") {
      disable_any_whitespace = read_bool(*it, at);
    } else if (k == "disable_fallback" || k == "disable_additional_properties") {
      // disable_fallback: seam has one backend and never falls back. disable_additional_properties:
      // seam's JSON Schema mode already refuses properties a schema does not list (as vLLM's
      // default xgrammar backend), so either value gives the same output.
      read_bool(*it, at);
    } else if (k == "whitespace_pattern") {
      throw bad_request("'" + at +
                            "' is not supported: JSON output is compact, or any JSON whitespace with "
                            "structured_outputs.disable_any_whitespace false",
                        at);
    } else if (k == "structural_tag") {
      throw bad_request("'" + at + "' is not supported (structural tags)", at);
    } else {
      throw bad_request("'" + at +
                            "' is not a field of structured_outputs (json, regex, choice, grammar, "
                            "json_object, disable_any_whitespace, disable_fallback, disable_additional_properties)",
                        at);
    }
  }
  if (!c) throw bad_request("'" + key + "' must set one of json, regex, choice, grammar or json_object", key);
  // vLLM's xgrammar allows any whitespace unless disable_any_whitespace; seam's default is compact
  // JSON (no runs of whitespace to loop in), so only an explicit false asks for any whitespace.
  if (disable_any_whitespace.has_value()) c->any_whitespace = !*disable_any_whitespace;
  return *c;
}

OutputConstraint read_field(const ojson& v, const std::string& key) {
  if (key == "json_schema" || key == "guided_json") return make(Kind::json_schema, read_schema(v, key, true), key);
  if (key == "regex" || key == "guided_regex") return make(Kind::regex, read_string(v, key), key);
  if (key == "ebnf" || key == "guided_grammar") return make(Kind::ebnf, read_string(v, key), key);
  if (key == "guided_choice") return make(Kind::choice, read_choice(v, key), key);
  return read_structured_outputs(v);
}

// The top-level field a constraint came from ("structured_outputs.json" -> "structured_outputs").
std::string top_field(const std::string& field) { return field.substr(0, field.find('.')); }

}  // namespace

bool has_structured_output_fields(const nlohmann::json& body) {
  for (const char* f : k_fields)
    if (auto it = body.find(f); it != body.end() && !it->is_null()) return true;
  return body.contains("guided_decoding_backend");  // type-checked here too
}

void read_structured_output_fields(const ojson& body, ApiRequest& r) {
  if (const ojson* b = find(body, "guided_decoding_backend"); b && !b->is_string())
    throw wrong_type("guided_decoding_backend", "a string", *b);
  for (const char* f : k_fields) {
    const ojson* v = find(body, f);
    if (!v) continue;
    std::optional<OutputConstraint> c =
        std::string(f) == "response_format" ? read_response_format(*v) : std::optional(read_field(*v, f));
    if (!c) continue;  // response_format text
    if (r.params.constraint)
      throw bad_request("'" + top_field(r.params.constraint->field) + "' and '" + f +
                            "' both ask for structured output; a request takes one constraint",
                        f);
    r.params.constraint = std::move(c);
  }
}

}  // namespace seam
