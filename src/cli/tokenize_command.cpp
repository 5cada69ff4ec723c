// seam tokenize / seam detokenize: JSON lines on stdin -> JSON lines on stdout.
#include "cli/tokenize_command.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/json_lines.h"
#include "core/error.h"
#include "core/json_parse.h"

namespace seam::cli {

namespace {

using nlohmann::json;

// Each line a JSON object, answered by `handle` (json_lines.h: a bad line is reported and counted).
int for_each_line(std::istream& in, std::ostream& out, std::ostream& err,
                  const std::function<json(const json&)>& handle) {
  return cli::for_each_line(in, err, [&](const std::string& line) {
    json request;
    try {
      request = json::parse(line);
    } catch (const json::exception& e) {
      throw Error("not valid JSON: " + json_error_text(e));
    }
    SEAM_CHECK(request.is_object(), "expected a JSON object");
    out << handle(request).dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
  });
}

bool optional_flag(const json& request, const char* key, bool fallback) {
  auto it = request.find(key);
  if (it == request.end() || it->is_null()) return fallback;
  SEAM_CHECK(it->is_boolean(), "\"", key, "\" must be true or false");
  return it->get<bool>();
}

std::unique_ptr<Tokenizer> parse_and_load(const char* name, const char* description, int argc, char** argv,
                                          int* exit_code) {
  CLI::App app(description, name);
  std::string dir;
  app.add_option("--tokenizer", dir, "model folder with tokenizer.json or tokenizer.model")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e);
    return nullptr;
  }
  return load_tokenizer(dir);
}

}  // namespace

int tokenize_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out, std::ostream& err) {
  return for_each_line(in, out, err, [&](const json& request) {
    auto text = request.find("text");
    SEAM_CHECK(text != request.end() && text->is_string(), "\"text\" must be a string");
    const bool add_special = optional_flag(request, "add_special_tokens", true);
    return json{{"ids", tokenizer.encode(text->get_ref<const std::string&>(), add_special)}};
  });
}

int detokenize_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out, std::ostream& err) {
  return for_each_line(in, out, err, [&](const json& request) {
    auto ids = request.find("ids");
    SEAM_CHECK(ids != request.end() && ids->is_array(), "\"ids\" must be an array of token ids");
    std::vector<int32_t> values;
    values.reserve(ids->size());
    for (const json& id : *ids) {
      SEAM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 &&
                     id.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                 "\"ids\" must hold non-negative integers, got ", id.dump());
      values.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    const bool skip = optional_flag(request, "skip_special_tokens", false);
    return json{{"text", tokenizer.decode(values, skip)}};
  });
}

int tokenize_command(int argc, char** argv) {
  int exit_code = 0;
  auto tokenizer = parse_and_load("seam tokenize", "seam tokenize: JSON lines {\"text\", \"add_special_tokens\"} -> {\"ids\"}",
                                  argc, argv, &exit_code);
  if (!tokenizer) return exit_code;
  return tokenize_lines(*tokenizer, std::cin, std::cout, std::cerr);
}

int detokenize_command(int argc, char** argv) {
  int exit_code = 0;
  auto tokenizer = parse_and_load("seam detokenize",
                                  "seam detokenize: JSON lines {\"ids\", \"skip_special_tokens\"} -> {\"text\"}", argc,
                                  argv, &exit_code);
  if (!tokenizer) return exit_code;
  return detokenize_lines(*tokenizer, std::cin, std::cout, std::cerr);
}

}  // namespace seam::cli
