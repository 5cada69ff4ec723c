// Errors of the Jinja engine. Every failure (syntax, a type error, a name
// that is undefined where a value is needed, a bound exceeded, a template's own
// raise_exception) is a jinja::TemplateError: a seam::Error with a one-line
// message, so callers report it like any other bad input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace seam::jinja {

enum class ErrorKind {
  syntax,     // the template text does not parse (TemplateSyntaxError)
  type,       // an operation on values of the wrong type (TypeError, ValueError, ...)
  undefined,  // an undefined value used where a value is needed (UndefinedError)
  raised,     // the template called raise_exception(message): what() is the message verbatim
  limit,      // a bound (loop iterations, recursion depth, output size) was exceeded
};

class TemplateError : public Error {
 public:
  TemplateError(ErrorKind kind, const std::string& message) : Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) { throw TemplateError(kind, message); }

// The output size limit (RenderConfig's max_output_bytes) on what a template builds on the way:
// a string of more than `max_size` bytes, or a list whose copied items take more than `max_size`
// bytes (copy_bytes in value.h), fails (ErrorKind::limit) before it is allocated; a value turned
// into text (str, repr, join, ~) fails as soon as its text passes `max_size`. It bounds what a
// template, or the arguments it is rendered with, can make the server allocate: 'x' * 10**12,
// 'x'.center(10**12), '{:>1000000000000}'.format(1), [0] * 10**8, ... must fail, not exhaust the
// host's memory.
[[noreturn]] inline void fail_size_limit(size_t max_size) {
  fail(ErrorKind::limit, "a string or list grew past the output size limit (" + std::to_string(max_size) + " bytes)");
}

inline void check_size(size_t n, size_t max_size) {
  if (n > max_size) fail_size_limit(max_size);
}

// check_size of `base` plus `count` copies of `unit` (a fill, a repeated string or list), computed
// without overflow: 2**62 copies of a 4-byte fill must fail, not wrap round to a size that passes.
// A count <= 0 adds nothing.
inline void check_repeat_size(size_t base, size_t unit, int64_t count, size_t max_size) {
  check_size(base, max_size);
  if (count > 0 && unit > 0 && static_cast<uint64_t>(count) > (max_size - base) / unit) fail_size_limit(max_size);
}

}  // namespace seam::jinja
