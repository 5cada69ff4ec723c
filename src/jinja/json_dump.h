// Python's json.dumps on template values, which is what transformers' tojson
// filter is: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys). Its default separators are
// ", " and ": " (or "," and ": " with an indent), floats print as Python's
// repr, and non-ASCII text is kept (no HTML escaping, unlike jinja2's own tojson).
#pragma once
#include <optional>
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // the indent unit (n spaces for an integer indent); unset: one line
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws TemplateError(type) for values JSON cannot hold (undefined, functions), and
// TemplateError(limit) when the text would grow past `max_size` bytes (the renderer's output size
// limit: an indent, a separator or a repeated item multiplies what the template passed in).
std::string json_dumps(const Value& v, const JsonDumpOptions& options, size_t max_size);

}  // namespace seam::jinja
