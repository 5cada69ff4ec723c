// Errors of the Jinja engine. Every failure (syntax, a type error, a name
// that is undefined where a value is needed, a bound exceeded, a template's own
// raise_exception) is a jinja::TemplateError: a seam::Error with a one-line
// message, so callers report it like any other bad input.
#pragma once
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

}  // namespace seam::jinja
