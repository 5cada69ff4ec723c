#include "core/json_parse.h"

#include <algorithm>
#include <vector>

namespace seam {

namespace {

using json = nlohmann::json;

constexpr size_t k_max_error_bytes = 240;
constexpr size_t k_max_path_bytes = 120;

// The containers open at the parser's position: an object remembers its last
// key, an array how many items it has finished.
struct PathFrame {
  bool is_array = false;
  std::string key;
  size_t n_items = 0;
};

// The path of the innermost value, cut to k_max_path_bytes (a body nested
// a thousand deep would give a path of kilobytes; found by request_json_fuzz).
std::string path_of(const std::vector<PathFrame>& frames) {
  std::string path;
  for (const PathFrame& f : frames) {
    if (path.size() > k_max_path_bytes) {
      path.resize(k_max_path_bytes);
      return path + "...";
    }
    if (f.is_array) {
      path += "[" + std::to_string(f.n_items) + "]";
    } else {
      if (!path.empty()) path += ".";
      path += f.key;
    }
  }
  return path;
}

}  // namespace

std::string json_error_text(const json::exception& e) {
  std::string text = e.what();
  if (text.starts_with("[json.exception.")) {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text.erase(0, close + 2);
  }
  // nlohmann quotes the token it stopped in ("last read: '...'"), which can be
  // a whole multi-megabyte string of the body: keep the start, cut on a UTF-8
  // character boundary.
  if (text.size() > k_max_error_bytes) {
    size_t cut = k_max_error_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    text += "...";
  }
  return text;
}

size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > k_max_json_depth) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

json parse_json_document(std::string_view text) {
  std::vector<PathFrame> frames;
  const json::parser_callback_t track = [&frames](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames.size() >= k_max_json_depth)  // before nlohmann builds it (json_parse.h)
          throw JsonParseError("JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels at '" +
                                   path_of(frames) + "'",
                               path_of(frames));
        frames.push_back(PathFrame{event == json::parse_event_t::array_start, "", 0});
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) frames.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        [[fallthrough]];
      case json::parse_event_t::value:
        if (!frames.empty() && frames.back().is_array) ++frames.back().n_items;
        break;
    }
    return true;
  };
  try {
    return json::parse(text, track);
  } catch (const json::out_of_range& e) {
    // The only out_of_range of parsing: a number past the double range (406).
    const std::string field = path_of(frames);
    throw JsonParseError(
        (field.empty() ? std::string("a number") : "'" + field + "'") + " is out of range (" + json_error_text(e) + ")",
        field);
  } catch (const json::exception& e) {
    throw JsonParseError("not valid JSON: " + json_error_text(e), "");
  }
}

}  // namespace seam
