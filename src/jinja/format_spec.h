// Python's format-specification mini-language (str.format's "{:spec}", format(value, spec)):
// [[fill]align][sign][#][0][width][,|_][.precision][type] over str, int, bool and float values,
// as Python formats them; width and precision count code points. Other value types with a
// non-empty spec are a TypeError, as in Python.
#pragma once
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

// `max_size` is the renderer's output size limit: a width or a float's precision drives the size
// of the result whatever the value, so '{:>1000000000000}' fails (ErrorKind::limit) before
// anything is allocated.
std::string format_with_spec(const Value& v, const std::string& spec, size_t max_size);

}  // namespace seam::jinja
