// jinja::Template: the engine's public face. Parse once, render many times
// (a Template is immutable after parse; render() may run on several threads).
//
//   auto t = jinja::Template::parse(text);          // throws TemplateError(syntax)
//   std::string s = t.render(context_json);         // throws TemplateError
//
// The defaults are transformers' chat-template environment: trim_blocks,
// lstrip_blocks, keep_trailing_newline=false, loop controls and the
// {% generation %} tag, globals raise_exception and strftime_now, the sandbox
// (no private attributes, lists and dicts immutable).
#pragma once
#include <ctime>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/evaluator.h"
#include "jinja/value.h"

namespace seam::jinja {

struct Options {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
  RenderConfig render;  // bounds, and a fixed time for strftime_now
};

class Template {
 public:
  static Template parse(const std::string& source, const Options& options = {});

  // `context` must be a JSON object; its members become the template's variables.
  std::string render(const nlohmann::json& context) const;
  std::string render(const std::vector<std::pair<std::string, Value>>& context) const;

  const Options& options() const { return *options_; }

 private:
  std::shared_ptr<const Body> body_;
  std::shared_ptr<const Options> options_;
};

// A calendar time (UTC fields) with its weekday and day of the year filled in, for RenderConfig::fixed_now.
std::tm make_time(int year, int month, int day, int hour = 0, int minute = 0, int second = 0);

}  // namespace seam::jinja
