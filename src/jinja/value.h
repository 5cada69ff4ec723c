// Value: a template value with Python's semantics (what jinja2 operates on).
// Lists and dicts are shared by reference like Python objects; the sandbox is
// immutable (transformers renders in an ImmutableSandboxedEnvironment), so the
// only object a template can change is a namespace().
// Dict keys are stored as strings: a str key as it is, a number / bool / None key (a template
// literal such as {0: 'a', 512: 'b'}) as a tagged string (dict_key); the insertion order is
// kept, as Python dicts keep it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace seam::jinja {

class Value;

// Arguments of a call: positional, then keyword (in the order written).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;  // prints as (a, b); tuple == list is false, as in Python
  // A named tuple's field names (groupby's (grouper, list)): t.grouper is t[0]; empty otherwise.
  std::vector<std::string> fields;
};

struct FunctionObj {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

enum class DictFlavor { dict, namespace_, loop };

struct DictObj {
  std::vector<std::pair<std::string, Value>> items;
  DictFlavor flavor = DictFlavor::dict;
  std::shared_ptr<FunctionObj> call;  // loop objects of recursive loops are callable: loop(children)

  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  // Inserts or replaces (a replaced key keeps its position, as in Python).
  void set(const std::string& key, Value value);
};

enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, function };

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string hint) {
    Value v;
    v.str_ = std::move(hint);
    return v;
  }
  static Value none() { return Value(Kind::none); }
  Value(bool b) : kind_(Kind::boolean), int_(b) {}
  Value(int v) : kind_(Kind::integer), int_(v) {}
  Value(int64_t v) : kind_(Kind::integer), int_(v) {}
  Value(double v) : kind_(Kind::floating), float_(v) {}
  Value(std::string s) : kind_(Kind::string), str_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::string), str_(s) {}
  Value(std::shared_ptr<ListObj> l) : kind_(Kind::list), list_(std::move(l)) {}
  Value(std::shared_ptr<DictObj> d) : kind_(Kind::dict), dict_(std::move(d)) {}
  Value(std::shared_ptr<FunctionObj> f) : kind_(Kind::function), fn_(std::move(f)) {}
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value dict();
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);
  // JSON null is None; objects keep their member order (ordered_json keeps the input's order).
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_int() const { return kind_ == Kind::integer; }
  bool is_float() const { return kind_ == Kind::floating; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_function() const { return kind_ == Kind::function; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // integer or boolean
  double as_double() const { return kind_ == Kind::floating ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return str_; }
  // The hint of an undefined value: what was looked up ("'x' is undefined").
  const std::string& undefined_hint() const { return str_; }
  ListObj& list_obj() const { return *list_; }
  DictObj& dict_obj() const { return *dict_; }
  const std::shared_ptr<DictObj>& dict_ptr() const { return dict_; }
  FunctionObj& function_obj() const { return *fn_; }

  // Python's bool(x) (undefined is false).
  bool truthy() const;
  // No bound on the text str() and repr() build (callers outside a render).
  static constexpr size_t kUnlimited = SIZE_MAX;
  // Python's str(x): None/True/False, float repr, repr() of lists and dicts; undefined prints "";
  // a string is itself (it exists already, so it is returned whatever its size).
  // `max_size` bounds the text built for a list or dict, as repr's does.
  std::string str(size_t max_size = kUnlimited) const;
  // Python's repr(x). A namespace can be made to contain itself; printing nests
  // at most 200 deep and then fails (ErrorKind::limit) rather than overflowing the stack.
  // `max_size` is the renderer's output size limit (the renderer passes it; callers outside a
  // render print unbounded): lists share their items, so [[s]] * 30 nested thrice is a few KB in
  // memory and 30**3 copies of s in text. The text fails (fail_size_limit) as soon as it would
  // pass `max_size`, before the rest of it is built.
  std::string repr(size_t max_size = kUnlimited) const;
  // Python's type name ("str", "int", "NoneType", "list", "dict", ...).
  const char* type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;  // string, or an undefined value's hint
  std::shared_ptr<ListObj> list_;
  std::shared_ptr<DictObj> dict_;
  std::shared_ptr<FunctionObj> fn_;
};

// The bytes a copy of a value takes, roughly: the Value itself plus a string's text (or an
// undefined value's hint); a list or dict is shared, not copied. A list built by repetition or
// concatenation is held to the output size limit in these bytes, as a string is in its bytes:
// [0] * 16000000 is 16M items of sizeof(Value), not 16 MB.
size_t copy_bytes(const Value& v);
size_t copy_bytes(const std::vector<Value>& items);

// Python float repr (shortest round-trip digits; "1.0", "1e-05", "1e+16", "inf", "nan").
std::string format_float(double d);

// The stored form of a dict key: a str as it is; an int, a bool or a float of integral value as
// "\x01i<int>" (Python's hash equality: d[1], d[1.0] and d[True] are one key), another float as
// "\x01f<repr>", None as "\x01n". Other types are unhashable (a type error).
std::string dict_key(const Value& k);
// Whether `k` can be a key (str, number, bool, None).
bool dict_key_hashable(const Value& k);
// The key a stored form stands for (an int for bools: {True: 1} iterates as 1).
Value dict_key_value(const std::string& stored);
// The key as json.dumps writes it: a str as it is, a number as its repr, None as "null".
std::string dict_key_json(const std::string& stored);
// Python's repr of a str (quotes chosen as Python chooses them).
std::string repr_string(const std::string& s);

}  // namespace seam::jinja
