#include "jinja/builtins.h"

#include <algorithm>
#include <ctime>

#include "jinja/args.h"
#include "jinja/error.h"

namespace seam::jinja {

namespace {

Value range_fn(CallArgs& a, int64_t max_items) {
  for (const Value& v : a.args)
    if (!v.is_int() && !v.is_bool()) fail(ErrorKind::type, std::string("'") + v.type_name() + "' object cannot be interpreted as an integer");
  int64_t start = 0, stop = 0, step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else if (a.args.size() == 2 || a.args.size() == 3) {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  } else {
    fail(ErrorKind::type, "range expected 1 to 3 integer arguments, got " + std::to_string(a.args.size()));
  }
  if (step == 0) fail(ErrorKind::type, "range() arg 3 must not be zero");
  // The sandbox refuses ranges over its limit (jinja2's MAX_RANGE, here the loop bound). The count
  // is taken in unsigned arithmetic: stop - start overflows int64 for range(-2**62, 2**62), which
  // must be refused, not wrap round to a negative (or small) count.
  const uint64_t span = step > 0 ? (stop > start ? uint64_t(stop) - uint64_t(start) : 0)
                                 : (start > stop ? uint64_t(start) - uint64_t(stop) : 0);
  const uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
  const uint64_t n = span == 0 ? 0 : (span - 1) / stride + 1;
  if (n > uint64_t(std::max<int64_t>(0, max_items)))
    fail(ErrorKind::limit, "range() of " + std::to_string(n) + " items exceeds the loop iteration limit (" +
                               std::to_string(max_items) + ")");
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) items.emplace_back(int64_t(uint64_t(start) + i * uint64_t(step)));
  return Value::list(std::move(items));
}

// namespace(mapping?, **kwargs): the one mutable object ({% set ns.x = ... %}).
Value namespace_fn(CallArgs& a, NamespaceRegistry& made) {
  auto ns = std::make_shared<DictObj>();
  ns->flavor = DictFlavor::namespace_;
  made.push_back(ns);
  for (const Value& v : a.args) {
    if (!v.is_dict()) fail(ErrorKind::type, "namespace() takes a mapping or keyword arguments");
    for (const auto& [k, val] : v.dict_obj().items) ns->set(k, val);
  }
  for (const auto& [k, v] : a.kwargs) ns->set(k, v);
  return Value(ns);
}

Value dict_fn(CallArgs& a) {
  Value d = Value::dict();
  for (const Value& v : a.args) {
    if (!v.is_dict()) fail(ErrorKind::type, "dict() takes a mapping or keyword arguments");
    for (const auto& [k, val] : v.dict_obj().items) d.dict_obj().set(k, val);
  }
  for (const auto& [k, v] : a.kwargs) d.dict_obj().set(k, v);
  return d;
}

// joiner(sep): returns "" the first time it is called, `sep` after. `max_size`: the output size
// limit, for the text of a sep that is not a str.
Value joiner_fn(CallArgs& a, size_t max_size) {
  const std::string sep = arg_or(a, 0, "sep", Value(", ")).str(max_size);
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](CallArgs&) {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(sep);
  });
}

// cycler(a, b, ...): .next() walks the items round, .current is the item next() returns.
Value cycler_fn(CallArgs& a) {
  if (a.args.empty()) fail(ErrorKind::type, "cycler() needs at least one item");
  auto items = std::make_shared<std::vector<Value>>(a.args);
  auto c = std::make_shared<DictObj>();
  c->flavor = DictFlavor::namespace_;
  c->set("current", (*items)[0]);
  std::weak_ptr<DictObj> weak = c;
  auto pos = std::make_shared<size_t>(0);
  c->set("next", Value::function("cycler.next", [items, pos, weak](CallArgs&) {
    const Value v = (*items)[*pos];
    *pos = (*pos + 1) % items->size();
    if (auto self = weak.lock()) self->set("current", (*items)[*pos]);
    return v;
  }));
  c->set("reset", Value::function("cycler.reset", [items, pos, weak](CallArgs&) {
    *pos = 0;
    if (auto self = weak.lock()) self->set("current", (*items)[0]);
    return Value::none();
  }));
  return Value(c);
}

}  // namespace

void release_namespaces(NamespaceRegistry& namespaces) {
  for (const std::weak_ptr<DictObj>& w : namespaces)
    if (auto ns = w.lock()) {
      std::vector<std::pair<std::string, Value>> items;
      items.swap(ns->items);  // destroyed here, after ns no longer holds them
    }
  namespaces.clear();
}

void add_builtins(Scope& scope, const RenderConfig& config, const std::shared_ptr<NamespaceRegistry>& namespaces) {
  const int64_t max_items = config.limits.max_loop_iterations;
  const size_t max_size = config.limits.max_output_bytes;
  scope.vars["range"] = Value::function("range", [max_items](CallArgs& a) { return range_fn(a, max_items); });
  scope.vars["namespace"] = Value::function("namespace", [namespaces](CallArgs& a) { return namespace_fn(a, *namespaces); });
  scope.vars["dict"] = Value::function("dict", dict_fn);
  scope.vars["joiner"] = Value::function("joiner", [max_size](CallArgs& a) { return joiner_fn(a, max_size); });
  scope.vars["cycler"] = Value::function("cycler", cycler_fn);
  scope.vars["raise_exception"] = Value::function("raise_exception", [max_size](CallArgs& a) -> Value {
    fail(ErrorKind::raised, a.args.empty() ? std::string() : a.args[0].str(max_size));
  });
  const std::optional<std::tm> fixed = config.fixed_now;
  scope.vars["strftime_now"] = Value::function("strftime_now", [fixed](CallArgs& a) {
    const std::string format = string_arg(a, 0, "format", "strftime_now");
    std::tm tm{};
    if (fixed) {
      tm = *fixed;
    } else {
      const std::time_t now = std::time(nullptr);
      localtime_r(&now, &tm);
    }
    // strftime gives 0 for an empty result and for an overflow; grow until it fits.
    for (size_t cap = 128; cap <= (size_t{1} << 20); cap *= 4) {
      std::string buf(cap, '\0');
      const size_t n = std::strftime(buf.data(), cap, format.c_str(), &tm);
      if (n > 0 || format.empty()) return Value(buf.substr(0, n));
    }
    return Value("");
  });
}

}  // namespace seam::jinja
