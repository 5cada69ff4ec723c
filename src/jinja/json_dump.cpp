#include "jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii, size_t max_size) {
  // The same string may be dumped many times (a list that repeats one item): the text is held to
  // the output size limit at each string, before its unescaped size is added and after its escapes.
  check_size(out.size() + s.size() + 2, max_size);
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char32_t cp = utf8_next(s, i);
    char buf[16];
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp == 0x7f)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else if (ensure_ascii && cp >= 0x80) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                          static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          }
          out += buf;
        } else {
          out.append(s, start, i - start);
        }
    }
  }
  out += '"';
  check_size(out.size(), max_size);
}

class Dumper {
 public:
  Dumper(const JsonDumpOptions& o, size_t max_size) : opt_(o), max_size_(max_size) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void dump(std::string& out, const Value& v, int level) {
    if (level > 512) fail(ErrorKind::limit, "tojson: value nested too deeply");
    switch (v.kind()) {
      case Kind::none: out += "null"; return;
      case Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
      case Kind::integer: out += std::to_string(v.as_int()); return;
      case Kind::floating: {
        const double d = v.as_double();
        if (std::isnan(d)) out += "NaN";
        else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
        else out += format_float(d);
        return;
      }
      case Kind::string: dump_string(out, v.as_string(), opt_.ensure_ascii, max_size_); return;
      case Kind::list: {
        const auto& items = v.list_obj().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) append(out, item_sep_);
          newline(out, level + 1);
          dump(out, items[i], level + 1);
        }
        newline(out, level);
        out += ']';
        return;
      }
      case Kind::dict: {
        if (v.dict_obj().flavor != DictFlavor::dict) break;
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.dict_obj().items) items.push_back(&kv);
        if (items.empty()) {
          out += "{}";
          return;
        }
        if (opt_.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) {
            // Number keys (dict_key) sort by value, as Python's json.dumps(sort_keys=True) does.
            const Value x = dict_key_value(a->first), y = dict_key_value(b->first);
            if (x.is_number() && y.is_number()) return x.as_double() < y.as_double();
            return a->first < b->first;
          });
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) append(out, item_sep_);
          newline(out, level + 1);
          dump_string(out, dict_key_json(items[i]->first), opt_.ensure_ascii, max_size_);
          append(out, key_sep_);
          dump(out, items[i]->second, level + 1);
        }
        newline(out, level);
        out += '}';
        return;
      }
      default: break;
    }
    fail(ErrorKind::type, std::string("Object of type ") + v.type_name() + " is not JSON serializable");
  }

 private:
  // The separators and the indent are the template's strings, repeated once per item (and the
  // indent once per level on each line): held to the output size limit before they are added.
  void append(std::string& out, const std::string& text) const {
    check_size(out.size() + text.size(), max_size_);
    out += text;
  }

  void newline(std::string& out, int level) const {
    if (!opt_.indent) return;
    check_repeat_size(out.size() + 1, opt_.indent->size(), level, max_size_);
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt_.indent;
  }

  const JsonDumpOptions& opt_;
  size_t max_size_;
  std::string item_sep_, key_sep_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options, size_t max_size) {
  std::string out;
  Dumper(options, max_size).dump(out, v, 0);
  return out;
}

}  // namespace seam::jinja
