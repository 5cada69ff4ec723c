#include "jinja/tests.h"

#include <unordered_map>

#include "jinja/args.h"
#include "jinja/error.h"
#include "jinja/evaluator.h"
#include "jinja/filters.h"
#include "jinja/operators.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

const Value& other(CallArgs& a, const char* test) {
  const Value* v = find_arg(a, 0, "other");
  if (!v) fail(ErrorKind::type, std::string("test '") + test + "' needs an argument");
  return *v;
}

bool t_defined(Renderer&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Renderer&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Renderer&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_boolean(Renderer&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Renderer&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Renderer&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Renderer&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Renderer&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_number(Renderer&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_string(Renderer&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_mapping(Renderer&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_iterable(Renderer&, const Value& v, CallArgs&) {
  return v.is_list() || v.is_string() || (v.is_dict() && v.dict_obj().flavor == DictFlavor::dict) || v.is_undefined();
}
// An undefined value has a length (0) and item access in jinja2, so it is a sequence too.
bool t_sequence(Renderer&, const Value& v, CallArgs&) {
  return v.is_list() || v.is_string() || (v.is_dict() && v.dict_obj().flavor == DictFlavor::dict) || v.is_undefined();
}
bool t_callable(Renderer&, const Value& v, CallArgs&) { return v.is_function() || (v.is_dict() && v.dict_obj().call); }

// Python's value % 2 == 1 (odd) / == 0 (even): a float like 2.5 is neither.
Value mod2(const Value& v) {
  require_defined(v);
  if (!v.is_number()) fail(ErrorKind::type, std::string("test 'odd'/'even' expects a number, got ") + v.type_name());
  return binary_op("%", v, Value(int64_t{2}), 0);
}
bool t_odd(Renderer&, const Value& v, CallArgs&) { return values_equal(mod2(v), Value(int64_t{1})); }
bool t_even(Renderer&, const Value& v, CallArgs&) { return values_equal(mod2(v), Value(int64_t{0})); }
bool t_divisibleby(Renderer&, const Value& v, CallArgs& a) {
  const Value& n = other(a, "divisibleby");
  require_defined(v);
  if (!(v.is_int() || v.is_bool()) || !(n.is_int() || n.is_bool()))
    fail(ErrorKind::type, "test 'divisibleby' expects integers");
  if (n.as_int() == 0) fail(ErrorKind::type, "integer division or modulo by zero");
  return v.as_int() % n.as_int() == 0;
}

bool t_eq(Renderer&, const Value& v, CallArgs& a) { return values_equal(v, other(a, "eq")); }
bool t_ne(Renderer&, const Value& v, CallArgs& a) { return !values_equal(v, other(a, "ne")); }
bool t_lt(Renderer&, const Value& v, CallArgs& a) { return value_compare(v, other(a, "lt")) < 0; }
bool t_le(Renderer&, const Value& v, CallArgs& a) { return value_compare(v, other(a, "le")) <= 0; }
bool t_gt(Renderer&, const Value& v, CallArgs& a) { return value_compare(v, other(a, "gt")) > 0; }
bool t_ge(Renderer&, const Value& v, CallArgs& a) { return value_compare(v, other(a, "ge")) >= 0; }
bool t_in(Renderer&, const Value& v, CallArgs& a) {
  const Value* seq = find_arg(a, 0, "seq");
  if (!seq) fail(ErrorKind::type, "test 'in' needs an argument");
  return contains(*seq, v);
}

// `sameas`: Python identity; for the singletons (None, True, False) that is equality
// of kind and value, for lists and dicts the same object.
bool t_sameas(Renderer&, const Value& v, CallArgs& a) {
  const Value& o = other(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::none:
    case Kind::undefined: return true;
    case Kind::boolean:
    case Kind::integer: return v.as_int() == o.as_int();
    case Kind::floating: return v.as_double() == o.as_double();
    case Kind::string: return v.as_string() == o.as_string();
    case Kind::list: return &v.list_obj() == &o.list_obj();
    case Kind::dict: return &v.dict_obj() == &o.dict_obj();
    case Kind::function: return &v.function_obj() == &o.function_obj();
  }
  return false;
}

bool t_lower(Renderer& r, const Value& v, CallArgs&) {
  const std::string s = v.str(r.config().limits.max_output_bytes);
  return lower(s) == s && upper(s) != s;
}
bool t_upper(Renderer& r, const Value& v, CallArgs&) {
  const std::string s = v.str(r.config().limits.max_output_bytes);
  return upper(s) == s && lower(s) != s;
}

bool t_filter(Renderer&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.as_string()) != nullptr; }
bool t_test(Renderer&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.as_string()) != nullptr; }
bool t_escaped(Renderer&, const Value&, CallArgs&) { return false; }

const std::unordered_map<std::string, TestFn>& table() {
  static const std::unordered_map<std::string, TestFn> t = {
      {"defined", t_defined},     {"undefined", t_undefined}, {"none", t_none},
      {"boolean", t_boolean},     {"true", t_true},           {"false", t_false},
      {"integer", t_integer},     {"float", t_float},         {"number", t_number},
      {"string", t_string},       {"mapping", t_mapping},     {"iterable", t_iterable},
      {"sequence", t_sequence},   {"callable", t_callable},   {"odd", t_odd},
      {"even", t_even},           {"divisibleby", t_divisibleby}, {"eq", t_eq},
      {"equalto", t_eq},          {"==", t_eq},               {"ne", t_ne},
      {"!=", t_ne},               {"lt", t_lt},               {"lessthan", t_lt},
      {"<", t_lt},                {"le", t_le},               {"<=", t_le},
      {"gt", t_gt},               {"greaterthan", t_gt},      {">", t_gt},
      {"ge", t_ge},               {">=", t_ge},               {"in", t_in},
      {"sameas", t_sameas},       {"lower", t_lower},         {"upper", t_upper},
      {"filter", t_filter},       {"test", t_test},           {"escaped", t_escaped},
  };
  return t;
}

}  // namespace

TestFn find_test(const std::string& name) {
  auto it = table().find(name);
  return it != table().end() ? it->second : nullptr;
}

}  // namespace seam::jinja
