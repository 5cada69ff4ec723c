// Parsing one JSON document from untrusted input (a request body, a
// --prompts-file line) with errors fit for the client: nlohmann's exception
// texts ("[json.exception.parse_error.101] ...") never leak, and a number too
// large for a double (1e400) names the field it was the value of.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace seam {

class JsonParseError : public Error {
 public:
  JsonParseError(const std::string& message, std::string field) : Error(message), field_(std::move(field)) {}
  // The path of the value that could not be read ("temperature",
  // "messages[1].content") when the document is well-formed up to a value out
  // of range; empty for a syntax error.
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Throws JsonParseError; the message says where ("at line 1, column 13") and
// what, without library tags. A document nested deeper than k_max_json_depth is refused.
nlohmann::json parse_json_document(std::string_view text);

// How deep JSON from untrusted input may nest arrays and objects. Everything that walks a
// document afterwards (the chat template's values, dumps, the schema converter) recurses once a
// level, so a 200 KB body of '[' would overflow a thread's stack and take the server down.
// Python's json module stops near 1,000; a real request nests a few dozen at most.
inline constexpr size_t k_max_json_depth = 256;

// The deepest nesting of arrays and objects in `text` (string contents skipped), counting no
// further than k_max_json_depth + 1; for JSON held in a string field before it is parsed.
size_t json_nesting_depth(std::string_view text);

// `what` of a nlohmann exception without its "[json.exception.<kind>.<n>] " tag.
std::string json_error_text(const nlohmann::json::exception& e);

}  // namespace seam
