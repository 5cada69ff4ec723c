#include "server/forced_tool_calls.h"

#include <nlohmann/json.hpp>

#include "core/json_parse.h"

namespace seam {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::unique_ptr<ForcedToolCalls> ForcedToolCalls::named(std::string function_name) {
  std::unique_ptr<ForcedToolCalls> p(new ForcedToolCalls());
  p->name_ = std::move(function_name);
  return p;
}

std::unique_ptr<ForcedToolCalls> ForcedToolCalls::required() {
  return std::unique_ptr<ForcedToolCalls>(new ForcedToolCalls());
}

void ForcedToolCalls::emit_call(ToolParseDelta& out, std::string name, std::string arguments) {
  if (id_prefix_.empty()) id_prefix_ = tool_call_detail::random_id_prefix();
  out.calls.push_back(ToolCallDelta{n_calls_, tool_call_detail::call_id(id_prefix_, n_calls_), std::move(name), ""});
  if (!arguments.empty()) out.calls.push_back(ToolCallDelta{n_calls_, "", "", std::move(arguments)});
  ++n_calls_;
}

ToolParseDelta ForcedToolCalls::feed(std::string_view text) {
  ToolParseDelta out;
  if (!name_.empty()) {
    if (n_calls_ == 0) {
      emit_call(out, name_, std::string(text));
    } else if (!text.empty()) {
      out.calls.push_back(ToolCallDelta{0, "", "", std::string(text)});
    }
    return out;
  }
  buf_.append(text);
  parse_items(out);
  return out;
}

ToolParseDelta ForcedToolCalls::finish() {
  ToolParseDelta out;
  if (!name_.empty()) {
    if (n_calls_ == 0) emit_call(out, name_, "");  // nothing was generated: a call with empty arguments
    return out;
  }
  parse_items(out);
  if (n_calls_ == 0) out.content = buf_;  // not a call at all: the text as it came
  return out;
}

void ForcedToolCalls::parse_items(ToolParseDelta& out) {
  using ojson = nlohmann::ordered_json;
  auto skip_space = [&] {
    while (pos_ < buf_.size() && is_space(buf_[pos_])) ++pos_;
  };
  while (!failed_ && !closed_) {
    skip_space();
    if (pos_ == buf_.size()) return;
    if (!opened_) {
      if (buf_[pos_] != '[') {
        failed_ = true;
        return;
      }
      opened_ = true;
      ++pos_;
      continue;
    }
    if (buf_[pos_] == ']') {
      closed_ = true;
      return;
    }
    if (buf_[pos_] == ',' && n_calls_ > 0) {
      ++pos_;
      continue;
    }
    const size_t n = tool_call_detail::json_value_end(std::string_view(buf_).substr(pos_));
    if (n == std::string::npos) {
      if (buf_[pos_] != '{') failed_ = true;
      return;  // an item not complete yet
    }
    const ojson item = json_nesting_depth(std::string_view(buf_).substr(pos_, n)) > k_max_json_depth
                           ? ojson(ojson::value_t::discarded)  // too deep to walk (json_parse.h): not a call
                           : ojson::parse(buf_.substr(pos_, n), nullptr, false);
    const auto name = item.is_object() ? item.find("name") : item.end();
    const auto params = item.is_object() ? item.find("parameters") : item.end();
    if (item.is_discarded() || !item.is_object() || name == item.end() || !name->is_string() || params == item.end() ||
        !params->is_object()) {
      failed_ = true;
      return;
    }
    emit_call(out, name->get<std::string>(), params->dump());
    pos_ += n;
  }
}

}  // namespace seam
