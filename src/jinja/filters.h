// The filters (`x | name(args)`): jinja2's builtin filters with their Python
// semantics, plus transformers' tojson. filters.cpp holds the filters on
// strings and numbers, sequence_filters.cpp those on lists and dicts.
#pragma once
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

class Renderer;
using FilterFn = Value (*)(Renderer&, const Value&, CallArgs&);

// nullptr when no filter has that name.
FilterFn find_filter(const std::string& name);
FilterFn find_sequence_filter(const std::string& name);

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0 (item before attribute).
// `max_size`: the renderer's output size limit, for a str method it binds (get_attribute).
Value get_attribute_path(const Value& v, const std::string& path, size_t max_size);

}  // namespace seam::jinja
