// The filters on sequences and mappings: first, last, join, map, select,
// reject, selectattr, rejectattr, items, dictsort, list, unique, sort,
// reverse, min, max, sum, batch, groupby.
#include <algorithm>
#include <unordered_map>

#include "jinja/args.h"
#include "jinja/error.h"
#include "jinja/evaluator.h"
#include "jinja/filters.h"
#include "jinja/methods.h"
#include "jinja/operators.h"
#include "jinja/unicode.h"

namespace seam::jinja {

Value get_attribute_path(const Value& v, const std::string& path, size_t max_size) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (cur.is_undefined()) return cur;
    cur = numeric ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part))), max_size)
                  : get_item(cur, Value(part), max_size);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

namespace {

std::vector<Value> items_of(const Value& v, size_t max_size) {
  if (v.is_none()) fail(ErrorKind::type, "'NoneType' object is not iterable");
  return iterate(v, max_size);
}

std::vector<Value> items_of(const Renderer& r, const Value& v) { return items_of(v, r.config().limits.max_output_bytes); }

// For sort/unique/min/max: the key of an item (its attribute if given), lower-cased
// strings unless case_sensitive, as jinja2's ignore_case postprocessor does.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive, size_t max_size) {
  Value k = attribute.is_none() || attribute.is_undefined()
                ? item
                : get_attribute_path(item, attribute.str(max_size), max_size);
  if (!case_sensitive && k.is_string()) return Value(lower(k.as_string()));
  return k;
}

// A string's first / last character directly: iterating it would build a Value a character,
// which the output limit refuses past ~160k characters (items_of), and s|last must not fail there.
Value f_first(Renderer& r, const Value& v, CallArgs&) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s.empty()) return Value::undefined("No first item, sequence was empty.");
    size_t i = 0;
    utf8_next(s, i);
    return Value(s.substr(0, i));
  }
  std::vector<Value> items = items_of(r, v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Renderer& r, const Value& v, CallArgs&) {
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s.empty()) return Value::undefined("No last item, sequence was empty.");
    size_t start = s.size() - 1;  // back to the last code point's lead byte
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    return Value(s.substr(start));
  }
  std::vector<Value> items = items_of(r, v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_join(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  const std::string sep = arg_or(a, 0, "d", Value("")).str(max_size);
  const Value attribute = arg_or(a, 1, "attribute", Value::none());
  std::string out;
  bool first = true;
  for (const Value& item : items_of(r, v)) {
    // An item's text (a list's, built held to the limit) and the separator, which repeats once
    // per item, are checked before they are added, as str.join does.
    const std::string text =
        (attribute.is_none() ? item : get_attribute_path(item, attribute.str(max_size), max_size)).str(max_size);
    check_size(out.size() + (first ? 0 : sep.size()) + text.size(), max_size);
    if (!first) out += sep;
    out += text;
    first = false;
  }
  return Value(out);
}

// map(attribute='x', default=d) or map('filter', args...).
Value f_map(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, val] : a.kwargs) {
    if (k == "attribute") attribute = &val;
    if (k == "default") fallback = &val;
  }
  if (attribute) {
    for (const Value& item : items_of(r, v)) {
      Value x = get_attribute_path(item, attribute->str(max_size), max_size);
      out.push_back(x.is_undefined() && fallback ? *fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (a.args.empty()) fail(ErrorKind::type, "map requires a filter argument");
  const std::string filter = a.args[0].str(max_size);
  CallArgs rest;
  rest.args.assign(a.args.begin() + 1, a.args.end());
  rest.kwargs = a.kwargs;
  for (const Value& item : items_of(r, v)) {
    CallArgs call = rest;
    out.push_back(r.apply_filter(filter, item, call));
  }
  return Value::list(std::move(out));
}

// select/reject('test', args...) and selectattr/rejectattr('attr', 'test', args...).
Value select_impl(Renderer& r, const Value& v, CallArgs& a, bool by_attr, bool keep_when) {
  const size_t max_size = r.config().limits.max_output_bytes;
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (a.args.empty()) fail(ErrorKind::type, "selectattr/rejectattr need an attribute name");
    attribute = a.args[next++].str(max_size);
  }
  std::string test;
  if (next < a.args.size()) test = a.args[next++].str(max_size);
  CallArgs rest;
  rest.args.assign(a.args.begin() + next, a.args.end());
  rest.kwargs = a.kwargs;
  std::vector<Value> out;
  for (const Value& item : items_of(r, v)) {
    const Value subject = by_attr ? get_attribute_path(item, attribute, max_size) : item;
    bool ok;
    if (test.empty()) {
      ok = subject.truthy();
    } else {
      CallArgs call = rest;
      ok = r.apply_test(test, subject, call);
    }
    if (ok == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, false, true); }
Value f_reject(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, false, false); }
Value f_selectattr(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, true, false); }

Value pairs_of(const Value& v) {
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict_obj().items) out.push_back(Value::tuple({dict_key_value(k), val}));
  return Value::list(std::move(out));
}

Value f_items(Renderer&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) fail(ErrorKind::type, "Can only get item pairs from a mapping.");
  return pairs_of(v);
}

Value f_dictsort(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  if (!v.is_dict()) fail(ErrorKind::type, "dictsort(): expected a mapping");
  const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const std::string by = arg_or(a, 1, "by", Value("key")).str(max_size);
  const bool reverse = arg_or(a, 2, "reverse", Value(false)).truthy();
  if (by != "key" && by != "value") fail(ErrorKind::type, "You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  std::vector<Value> pairs = pairs_of(v).list_obj().items;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const int c = value_compare(sort_key(x.list_obj().items[pos], Value::none(), case_sensitive, max_size),
                                sort_key(y.list_obj().items[pos], Value::none(), case_sensitive, max_size));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(pairs));
}

Value f_list(Renderer& r, const Value& v, CallArgs&) { return Value::list(items_of(r, v)); }

Value f_unique(Renderer& r, const Value& v, CallArgs& a) {
  const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg_or(a, 1, "attribute", Value::none());
  std::vector<Value> seen, out;
  for (const Value& item : items_of(r, v)) {
    const Value key = sort_key(item, attribute, case_sensitive, r.config().limits.max_output_bytes);
    bool dup = false;
    for (const Value& s : seen) dup |= values_equal(s, key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_sort(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  const bool reverse = arg_or(a, 0, "reverse", Value(false)).truthy();
  const bool case_sensitive = arg_or(a, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg_or(a, 2, "attribute", Value::none());
  std::vector<Value> items = items_of(r, v);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = value_compare(sort_key(x, attribute, case_sensitive, max_size),
                                sort_key(y, attribute, case_sensitive, max_size));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value f_reverse(Renderer& r, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<char32_t> cps = utf8_decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(utf8_encode(cps));
  }
  std::vector<Value> items = items_of(r, v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value min_max(const Value& v, CallArgs& a, bool want_max, size_t max_size) {
  const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg_or(a, 1, "attribute", Value::none());
  std::vector<Value> items = items_of(v, max_size);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int c = value_compare(sort_key(items[i], attribute, case_sensitive, max_size),
                                sort_key(items[best], attribute, case_sensitive, max_size));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

Value f_min(Renderer& r, const Value& v, CallArgs& a) {
  return min_max(v, a, false, r.config().limits.max_output_bytes);
}
Value f_max(Renderer& r, const Value& v, CallArgs& a) {
  return min_max(v, a, true, r.config().limits.max_output_bytes);
}

Value f_sum(Renderer& r, const Value& v, CallArgs& a) {
  const Value attribute = arg_or(a, 0, "attribute", Value::none());
  Value total = arg_or(a, 1, "start", Value(int64_t{0}));
  const size_t max_size = r.config().limits.max_output_bytes;
  for (const Value& item : items_of(r, v))
    total = binary_op(
        "+", total, attribute.is_none() ? item : get_attribute_path(item, attribute.str(max_size), max_size), max_size);
  return total;
}

Value f_batch(Renderer& r, const Value& v, CallArgs& a) {
  const int64_t n = int_arg(a, 0, "linecount", 1, "batch");
  if (n <= 0) fail(ErrorKind::type, "batch(): linecount must be positive");
  const Value* fill = find_arg(a, 1, "fill_with");
  std::vector<Value> out, cur;
  for (const Value& item : items_of(r, v)) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none()) {
      // The last batch is filled up to `linecount` items, a number the template chooses: held to
      // the output size limit (in the bytes the copies of the fill take, as list * n is) before it is built.
      check_repeat_size(0, copy_bytes(*fill), n - static_cast<int64_t>(cur.size()), r.config().limits.max_output_bytes);
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

// groupby(attribute): sorted by the attribute, then (grouper, list) pairs
// (unpack them: {% for key, items in x|groupby('a') %}, or read g.grouper / g.list).
Value f_groupby(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  const std::string attribute = arg_or(a, 0, "attribute", Value("")).str(max_size);
  CallArgs sort_args;
  sort_args.kwargs.emplace_back("attribute", Value(attribute));
  sort_args.kwargs.emplace_back("case_sensitive", arg_or(a, 2, "case_sensitive", Value(false)));
  const std::vector<Value> sorted = f_sort(r, v, sort_args).list_obj().items;
  std::vector<Value> out;
  for (size_t i = 0; i < sorted.size();) {
    const Value key = get_attribute_path(sorted[i], attribute, max_size);
    std::vector<Value> group;
    while (i < sorted.size() && values_equal(get_attribute_path(sorted[i], attribute, max_size), key))
      group.push_back(sorted[i++]);
    Value pair = Value::tuple({key, Value::list(std::move(group))});
    pair.list_obj().fields = {"grouper", "list"};  // jinja2's _GroupTuple: unpacked, or .grouper / .list
    out.push_back(std::move(pair));
  }
  return Value::list(std::move(out));
}

const std::unordered_map<std::string, FilterFn>& table() {
  static const std::unordered_map<std::string, FilterFn> t = {
      {"first", f_first},   {"last", f_last},         {"join", f_join},         {"map", f_map},
      {"select", f_select}, {"reject", f_reject},     {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr},
      {"items", f_items},   {"dictsort", f_dictsort}, {"list", f_list},         {"unique", f_unique},
      {"sort", f_sort},     {"reverse", f_reverse},   {"min", f_min},           {"max", f_max},
      {"sum", f_sum},       {"batch", f_batch},       {"groupby", f_groupby},
  };
  return t;
}

}  // namespace

FilterFn find_sequence_filter(const std::string& name) {
  auto it = table().find(name);
  return it != table().end() ? it->second : nullptr;
}

}  // namespace seam::jinja
