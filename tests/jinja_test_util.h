// Helpers of the Jinja engine tests: render a template text with a JSON context
// (transformers' environment: trim_blocks, lstrip_blocks), or get the error it raises.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "jinja/template.h"

namespace seam::test {

inline std::string render(const std::string& text, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                          jinja::Options options = {}) {
  options.render.fixed_now = jinja::make_time(2026, 7, 26);
  std::vector<std::pair<std::string, jinja::Value>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), jinja::Value::from_json(it.value()));
  return jinja::Template::parse(text, options).render(vars);
}

struct RenderFailure {
  jinja::ErrorKind kind;
  std::string message;
};

// The error rendering raises; fails the test when it renders.
inline RenderFailure render_error(const std::string& text,
                                  const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                                  jinja::Options options = {}) {
  try {
    const std::string out = render(text, context, options);
    ADD_FAILURE() << "expected an error, rendered: " << out;
  } catch (const jinja::TemplateError& e) {
    return {e.kind(), e.what()};
  }
  return {jinja::ErrorKind::type, ""};
}

}  // namespace seam::test
