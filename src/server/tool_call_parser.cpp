#include "server/tool_call_parser.h"

#include <cstdio>
#include <random>

namespace seam {

void ToolParseDelta::append(ToolParseDelta&& other) {
  content += other.content;
  for (ToolCallDelta& d : other.calls) calls.push_back(std::move(d));
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool all_space(std::string_view s) {
  for (char c : s)
    if (!is_space(c)) return false;
  return true;
}

}  // namespace

ToolParseDelta ToolCallParser::feed(std::string_view text) {
  buf_.append(text);
  return run(false);
}

ToolParseDelta ToolCallParser::finish() { return run(true); }

void ToolCallParser::emit(ToolParseDelta& out, std::vector<Call>& calls) {
  if (id_prefix_.empty()) id_prefix_ = tool_call_detail::random_id_prefix();
  for (Call& c : calls) {
    out.calls.push_back(ToolCallDelta{n_calls_, tool_call_detail::call_id(id_prefix_, n_calls_), std::move(c.name), ""});
    out.calls.push_back(ToolCallDelta{n_calls_, "", "", std::move(c.arguments)});
    ++n_calls_;
  }
  calls.clear();
}

ToolParseDelta ToolCallParser::run(bool final) {
  ToolParseDelta out;
  auto emit_content = [&](std::string_view s) {
    out.content.append(s);
    if (!all_space(s)) at_output_start_ = false;
  };
  for (;;) {
    if (!in_region_) {
      if (skip_ws_) {
        size_t k = 0;
        while (k < buf_.size() && (is_space(buf_[k]) || buf_[k] == ';')) ++k;
        buf_.erase(0, k);
        if (buf_.empty()) break;
        skip_ws_ = false;
      }
      size_t marker_len = 0, held = 0;
      const size_t p = find_start(buf_, at_output_start_, marker_len, held);
      if (p == std::string::npos) {
        // Whitespace at the start (before a partial marker or alone) may still precede a call: held back too.
        if (at_output_start_ && all_space(std::string_view(buf_).substr(0, buf_.size() - held))) held = buf_.size();
        const size_t n_emit = final ? buf_.size() : buf_.size() - held;
        emit_content(std::string_view(buf_).substr(0, n_emit));
        buf_.erase(0, n_emit);
        break;
      }
      const std::string_view before = std::string_view(buf_).substr(0, p);
      // Whitespace before a call at the start of the output (or between calls) is not content.
      if (!(at_output_start_ && all_space(before))) emit_content(before);
      region_raw_ = buf_.substr(p, marker_len);
      buf_.erase(0, p + marker_len);
      in_region_ = true;
      pending_.clear();
    }
    bool done = false, failed = false;
    const size_t used = parse_region(buf_, final, pending_, done, failed);
    if (!done && !failed && final) failed = true;  // a format that cannot decide at the end: not a call
    if (failed) {
      // Not a call after all: its marker is content, the text after it is scanned again.
      in_region_ = false;
      pending_.clear();
      at_output_start_ = false;
      emit_content(region_raw_);
      region_raw_.clear();
      continue;
    }
    if (!done) break;  // wait for more text
    buf_.erase(0, used);
    emit(out, pending_);
    in_region_ = false;
    region_raw_.clear();
    skip_ws_ = true;
    at_output_start_ = true;
  }
  return out;
}

namespace tool_call_detail {

std::string random_id_prefix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)rng());
  return buf;
}

std::string call_id(const std::string& prefix, int index) {
  char id[48];
  std::snprintf(id, sizeof id, "call_%s%08x", prefix.c_str(), unsigned(index));
  return id;
}

size_t json_value_end(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  if (i == s.size() || (s[i] != '{' && s[i] != '[')) return std::string::npos;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string::npos;
}

size_t partial_suffix(std::string_view buf, std::string_view marker) {
  const size_t n_max = std::min(buf.size(), marker.size() - 1);
  for (size_t n = n_max; n > 0; --n)
    if (buf.substr(buf.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace tool_call_detail

}  // namespace seam
