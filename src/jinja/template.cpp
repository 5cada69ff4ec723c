#include "jinja/template.h"

#include <nlohmann/json.hpp>

#include "jinja/builtins.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace seam::jinja {

Template Template::parse(const std::string& source, const Options& options) {
  LexOptions lex;
  lex.trim_blocks = options.trim_blocks;
  lex.lstrip_blocks = options.lstrip_blocks;
  lex.keep_trailing_newline = options.keep_trailing_newline;
  Template t;
  t.body_ = std::make_shared<const Body>(jinja::parse(tokenize(source, lex)));
  t.options_ = std::make_shared<const Options>(options);
  return t;
}

std::string Template::render(const nlohmann::json& context) const {
  if (!context.is_object()) fail(ErrorKind::type, "the template context must be a JSON object");
  std::vector<std::pair<std::string, Value>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), Value::from_json(it.value()));
  return render(vars);
}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& context) const {
  // Two scopes: the builtins below, the caller's variables (and top-level sets) above,
  // so a template may shadow a builtin without losing it for other renders.
  auto builtins = std::make_shared<Scope>();
  auto namespaces = std::make_shared<NamespaceRegistry>();
  add_builtins(*builtins, options_->render, namespaces);
  // However the render ends, the namespaces it made let go of their contents (builtins.h).
  struct Release {
    NamespaceRegistry& n;
    ~Release() { release_namespaces(n); }
  } release{*namespaces};
  auto globals = std::make_shared<Scope>();
  globals->parent = builtins;
  for (const auto& [k, v] : context) globals->vars[k] = v;
  Renderer renderer(options_->render, globals);
  return renderer.render(*body_);
}

std::tm make_time(int year, int month, int day, int hour, int minute, int second) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t t = timegm(&tm);  // normalizes and fills tm_wday / tm_yday
  gmtime_r(&t, &tm);
  return tm;
}

}  // namespace seam::jinja
