// Reading the arguments of a builtin call the way Python binds them: by
// position, or by keyword name.
#pragma once
#include <string>

#include "jinja/error.h"
#include "jinja/value.h"

namespace seam::jinja {

// The argument at position `index` or named `name`; nullptr when neither is given.
inline const Value* find_arg(const CallArgs& a, size_t index, const char* name) {
  if (index < a.args.size()) return &a.args[index];
  for (const auto& [k, v] : a.kwargs)
    if (k == name) return &v;
  return nullptr;
}

inline Value arg_or(const CallArgs& a, size_t index, const char* name, Value fallback) {
  const Value* v = find_arg(a, index, name);
  return v ? *v : std::move(fallback);
}

inline int64_t int_arg(const CallArgs& a, size_t index, const char* name, int64_t fallback, const char* fn) {
  const Value* v = find_arg(a, index, name);
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool())
    fail(ErrorKind::type, std::string(fn) + "(): '" + name + "' must be an integer, got " + v->type_name());
  return v->as_int();
}

inline std::string string_arg(const CallArgs& a, size_t index, const char* name, const char* fn) {
  const Value* v = find_arg(a, index, name);
  if (!v || !v->is_string())
    fail(ErrorKind::type, std::string(fn) + "(): '" + name + "' must be a string" +
                              (v ? std::string(", got ") + v->type_name() : std::string(" (missing)")));
  return v->as_string();
}

}  // namespace seam::jinja
