// The tests (`x is name(args)`): jinja2's builtin tests with Python's
// meaning (a bool is a number but not an integer; a dict is iterable, a
// sequence and a mapping; a string is iterable and a sequence).
#pragma once
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

class Renderer;
using TestFn = bool (*)(Renderer&, const Value&, CallArgs&);

// nullptr when no test has that name.
TestFn find_test(const std::string& name);

}  // namespace seam::jinja
