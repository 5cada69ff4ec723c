// Attribute and item lookup with jinja2's sandboxed rules, and the Python
// methods templates call on values: str (strip, split, startswith, replace,
// title, format, ...), dict (items, keys, values, get) and list (index,
// count). `obj.name` tries the attribute (a method) before the key and
// `obj[key]` the key before the attribute, as jinja2 does; a miss is an
// undefined value whose hint is jinja2's message ("'dict object' has no
// attribute 'content'"). Methods that would change a list or dict exist but
// raise, as the ImmutableSandboxedEnvironment makes them.
#pragma once
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

// `max_size` is the renderer's output size limit (RenderConfig's max_output_bytes), which a str
// method bound here holds its result to (center / ljust / rjust / zfill widths, format specs,
// replace, join): a template's arguments must not make the server allocate past it.
Value get_attribute(const Value& obj, const std::string& name, size_t max_size);
Value get_item(const Value& obj, const Value& key, size_t max_size);
// obj[start:stop:step] on a list or a string (code points); bounds may be none.
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);
// jinja2's object_type_repr: "dict object", "None", ...
std::string object_type_repr(const Value& obj);

}  // namespace seam::jinja
