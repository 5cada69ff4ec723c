// seam chat-template: JSON lines of conversations -> JSON lines of prompt text,
// rendered with the model's own Jinja chat template as transformers'
// apply_chat_template(..., tokenize=False) renders it.
#include "cli/chat_template_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/json_lines.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "jinja/error.h"

namespace seam::cli {

namespace {

using nlohmann::json;

const char* kind_name(jinja::ErrorKind kind) {
  switch (kind) {
    case jinja::ErrorKind::syntax: return "syntax";
    case jinja::ErrorKind::type: return "type";
    case jinja::ErrorKind::undefined: return "undefined";
    case jinja::ErrorKind::raised: return "raised";
    case jinja::ErrorKind::limit: return "limit";
  }
  return "type";
}

// "YYYY-MM-DDTHH:MM:SS" (or "YYYY-MM-DD") -> the calendar time strftime_now formats.
std::tm parse_fixed_time(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const int n = std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s);
  SEAM_CHECK((n == 3 || n == 6) && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h >= 0 && h < 24 && mi >= 0 &&
                 mi < 60 && s >= 0 && s < 61,
             "--fixed-time: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS, got '", text, "'");
  return jinja::make_time(y, mo, d, h, mi, s);
}

}  // namespace

int chat_template_lines(const jinja::HfChatTemplate& chat_template, std::istream& in, std::ostream& out,
                        std::ostream& err) {
  auto answer = [&](const json& result) {
    out << result.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
  };
  return for_each_line(
      in, err,
      [&](const std::string& line) {
        jinja::ChatRequest request;
        if (json_nesting_depth(line) > k_max_json_depth)
          throw Error("JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels");
        try {
          request = jinja::ChatRequest::from_json(nlohmann::ordered_json::parse(line));
        } catch (const json::exception& e) {
          throw Error(std::string("not valid JSON: ") + e.what());
        }
        try {
          answer(json{{"text", chat_template.render(request)}});
        } catch (const jinja::TemplateError& e) {  // the template's failure: an answer, not a bad line
          answer(json{{"error", e.what()}, {"error_kind", kind_name(e.kind())}});
        }
      },
      [&](const std::exception& e) { answer(json{{"error", e.what()}, {"error_kind", "request"}}); });
}

int chat_template_command(int argc, char** argv) {
  CLI::App app(
      "seam chat-template: JSON lines {messages, tools, documents, add_generation_prompt, kwargs} -> "
      "{\"text\"} or {\"error\"}, rendered with the model's Jinja chat template",
      "seam chat-template");
  std::string dir, spec, fixed_time;
  app.add_option("--tokenizer", dir, "model folder with tokenizer_config.json (or chat_template.jinja)")->required();
  app.add_option("--chat-template", spec, "a file holding a Jinja template, or the name of one of the folder's templates");
  app.add_option("--fixed-time", fixed_time,
                 "the time strftime_now() formats, YYYY-MM-DDTHH:MM:SS (default: the clock; for reproducible output)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  jinja::Options options;
  if (!fixed_time.empty()) options.render.fixed_now = parse_fixed_time(fixed_time);
  const auto chat_template = jinja::HfChatTemplate::from_folder(dir, spec, options);
  return chat_template_lines(chat_template, std::cin, std::cout, std::cerr);
}

}  // namespace seam::cli
