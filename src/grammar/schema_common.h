// What the JSON Schema converter's modules (json_schema_to_grammar.cpp, schema_all_of.cpp) share:
// its two errors, so that each message reads the same wherever it is raised, and which keywords
// are annotations.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace seam::grammar {

// A keyword (or a combination) the grammar does not enforce.
[[noreturn]] inline void schema_unsupported(const std::string& keyword, const std::string& path,
                                            const std::string& why = "") {
  throw Error("unsupported JSON Schema keyword '" + keyword + "' at " + path + (why.empty() ? "" : ": " + why));
}

// A schema that is malformed, or that accepts nothing.
[[noreturn]] inline void schema_invalid(const std::string& path, const std::string& what) {
  throw Error("invalid JSON Schema at " + path + ": " + what);
}

// A schema's "type" value `t`: one type name or a non-empty list of them; anything else is an
// invalid-schema error at path.
inline std::vector<std::string> schema_type_names(const nlohmann::ordered_json& t, const std::string& path) {
  std::vector<std::string> out;
  if (t.is_string()) {
    out.push_back(t.get<std::string>());
  } else if (t.is_array() && !t.empty()) {
    for (const auto& x : t) {
      if (!x.is_string()) schema_invalid(path + "/type", "expected type names");
      out.push_back(x.get<std::string>());
    }
  } else {
    schema_invalid(path + "/type", "expected a type name or a non-empty list of them");
  }
  return out;
}

// Keywords that are pure annotations or containers: no constraint of their own here.
inline bool is_schema_annotation(const std::string& k) {
  static const std::set<std::string> annotations = {
      "title", "description", "default",    "examples",         "$schema",
      "$id",   "$comment",    "deprecated", "readOnly",         "writeOnly",
      "$defs", "definitions", "$anchor",    "contentMediaType", "contentEncoding"};
  return annotations.count(k) > 0;
}

}  // namespace seam::grammar
