// Python's operators on template values: ==, <, +, -, *, /, //, %, **, `in`
// and jinja's `~`. Type errors carry Python's message ("can only concatenate
// str (not "list") to str"); an undefined operand raises UndefinedError, as
// jinja2's default Undefined does (it prints as "" but refuses arithmetic).
#pragma once
#include <string>

#include "jinja/value.h"

namespace seam::jinja {

bool values_equal(const Value& a, const Value& b);
// Python's a < b (numbers, strings, lists); a TypeError for other pairs.
bool value_less(const Value& a, const Value& b);
// Three-way compare for sort/min/max/dictsort: numbers, strings (optionally case-folded), lists.
int value_compare(const Value& a, const Value& b, bool case_sensitive = true);
// op is one of + - * / // % **; `max_size` (the renderer's output size limit) bounds the string
// or list built by + or *, and the fields of printf-style % (their widths and precisions).
Value binary_op(const std::string& op, const Value& a, const Value& b, size_t max_size);
Value negate(const Value& v);
// Python's `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// Throws UndefinedError when `v` is undefined (its hint is the message).
void require_defined(const Value& v);

}  // namespace seam::jinja
