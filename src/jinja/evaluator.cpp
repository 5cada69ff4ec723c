#include "jinja/evaluator.h"

#include <algorithm>

#include "jinja/error.h"
#include "jinja/filters.h"
#include "jinja/methods.h"
#include "jinja/operators.h"
#include "jinja/tests.h"
#include "jinja/unicode.h"

namespace seam::jinja {

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

struct Renderer::DepthGuard {
  explicit DepthGuard(Renderer& r) : r(r) {
    if (++r.call_depth_ > r.config_.limits.max_call_depth)
      fail(ErrorKind::limit, "maximum recursion depth exceeded (" + std::to_string(r.config_.limits.max_call_depth) +
                                 " nested macro or loop calls)");
  }
  ~DepthGuard() { --r.call_depth_; }
  Renderer& r;
};

Renderer::Renderer(const RenderConfig& config, std::shared_ptr<Scope> globals)
    : config_(config), globals_(std::move(globals)) {}

std::string Renderer::render(const Body& body) {
  std::string out;
  exec(body, globals_, out);
  return out;
}

void Renderer::count_iterations(int64_t n) {
  n_iterations_ += n;
  if (n_iterations_ > config_.limits.max_loop_iterations)
    fail(ErrorKind::limit, "the template ran more than " + std::to_string(config_.limits.max_loop_iterations) +
                               " loop iterations");
}

void Renderer::append(std::string& out, const std::string& text) const {
  if (out.size() + text.size() > config_.limits.max_output_bytes)
    fail(ErrorKind::limit, "the rendered text exceeds the output size limit (" +
                               std::to_string(config_.limits.max_output_bytes) + " bytes)");
  out += text;
}

void assign_targets(Scope& scope, const std::vector<std::string>& names, const Value& value, size_t max_size) {
  if (names.size() == 1) {
    scope.vars[names[0]] = value;
    return;
  }
  std::vector<Value> items = iterate(value, max_size);
  if (items.size() != names.size())
    fail(ErrorKind::type, items.size() > names.size()
                              ? "too many values to unpack (expected " + std::to_string(names.size()) + ")"
                              : "not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
                                    std::to_string(items.size()) + ")");
  for (size_t i = 0; i < names.size(); ++i) scope.vars[names[i]] = items[i];
}

std::vector<Value> iterate(const Value& v, size_t max_size) {
  switch (v.kind()) {
    case Kind::undefined: return {};  // jinja2's Undefined iterates as empty
    case Kind::list: return v.list_obj().items;
    case Kind::dict: {
      std::vector<Value> keys;
      for (const auto& [k, _] : v.dict_obj().items) keys.push_back(dict_key_value(k));
      return keys;
    }
    case Kind::string: {
      const std::string& s = v.as_string();
      // Code points: the bytes that are not UTF-8 continuation bytes.
      const size_t n = static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
      check_repeat_size(s.size(), sizeof(Value), static_cast<int64_t>(n), max_size);
      std::vector<Value> chars;
      chars.reserve(n);
      size_t i = 0;
      while (i < s.size()) {
        const size_t start = i;
        utf8_next(s, i);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    default: fail(ErrorKind::type, std::string("'") + v.type_name() + "' object is not iterable");
  }
}

Renderer::Flow Renderer::exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec_stmt(*s, scope, out);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Renderer::Flow Renderer::exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  switch (s.kind) {
    case StmtKind::text: append(out, s.text); break;
    case StmtKind::output: append(out, text_of(eval(*s.expr, scope))); break;
    case StmtKind::if_:
      return exec(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope, out);
    case StmtKind::for_: exec_for(s, scope, eval(*s.expr, scope), 0, out); break;
    case StmtKind::set: exec_set(s, scope, eval(*s.expr, scope)); break;
    case StmtKind::set_block: {
      std::string captured;
      exec(s.body, scope, captured);
      Value v(std::move(captured));
      if (s.expr2) v = eval_filter_chain(*s.expr2, scope, v);
      scope->vars[s.targets[0]] = v;
      break;
    }
    case StmtKind::macro: scope->vars[s.text] = make_macro(s, scope); break;
    case StmtKind::call_block: {
      const Expr& call = *s.expr;
      Value callee = eval(*call.children[0], scope);
      CallArgs args = eval_args(call, scope, 1);
      // The body becomes `caller`, a macro with the call block's parameters.
      args.kwargs.emplace_back("caller", make_macro(s, scope));
      append(out, text_of(this->call(callee, args)));
      break;
    }
    case StmtKind::filter_block: {
      std::string captured;
      exec(s.body, scope, captured);
      append(out, text_of(eval_filter_chain(*s.expr2, scope, Value(std::move(captured)))));
      break;
    }
    case StmtKind::with: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      for (size_t i = 0; i < s.targets.size(); ++i) inner->vars[s.targets[i]] = eval(*s.defaults[i], scope);
      return exec(s.body, inner, out);
    }
    case StmtKind::generation: return exec(s.body, scope, out);
    case StmtKind::break_: return Flow::break_;
    case StmtKind::continue_: return Flow::continue_;
  }
  return Flow::normal;
}

void Renderer::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, Value value) {
  if (!s.attr.empty()) {
    const Value* target = scope->lookup(s.targets[0]);
    if (!target || !target->is_dict() || target->dict_obj().flavor != DictFlavor::namespace_)
      fail(ErrorKind::type, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
    target->dict_obj().set(s.attr, std::move(value));
    return;
  }
  assign_targets(*scope, s.targets, value, config_.limits.max_output_bytes);
}

void Renderer::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, const Value& iterable, int depth,
                        std::string& out) {
  if (iterable.is_none()) fail(ErrorKind::type, "'NoneType' object is not iterable");
  std::vector<Value> items = iterate(iterable, config_.limits.max_output_bytes);
  if (s.expr2) {  // the loop filter runs before the loop, so loop.length counts only the kept items
    std::vector<Value> kept;
    for (const Value& item : items) {
      count_iterations(1);
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      assign_targets(*probe, s.targets, item, config_.limits.max_output_bytes);
      if (eval(*s.expr2, probe).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body, scope, out);
    return;
  }
  auto loop = std::make_shared<DictObj>();
  loop->flavor = DictFlavor::loop;
  if (s.recursive) {
    loop->call = std::make_shared<FunctionObj>();
    loop->call->name = "loop";
    loop->call->fn = [this, &s, scope, depth](CallArgs& args) -> Value {
      if (args.args.size() != 1) fail(ErrorKind::type, "loop() takes exactly one argument");
      DepthGuard guard(*this);
      std::string inner;
      exec_for(s, scope, args.args[0], depth + 1, inner);
      return Value(std::move(inner));
    };
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.cycle(a, b, ...) picks by the current index; it reads loop.index0 at call time.
  std::weak_ptr<DictObj> weak_loop = loop;
  Value cycle = Value::function("cycle", [weak_loop](CallArgs& args) -> Value {
    if (args.args.empty()) fail(ErrorKind::type, "no items for cycling given");
    auto l = weak_loop.lock();
    const int64_t i = l ? l->find("index0")->as_int() : 0;
    return args.args[static_cast<size_t>(i % static_cast<int64_t>(args.args.size()))];
  });
  // loop.changed(*values): true on the first call and whenever the values differ from the last call's.
  auto last_changed = std::make_shared<std::optional<Value>>();
  Value changed = Value::function("changed", [last_changed](CallArgs& args) -> Value {
    Value now = Value::list(args.args);
    if (*last_changed && values_equal(**last_changed, now)) return Value(false);
    *last_changed = now;
    return Value(true);
  });
  for (int64_t i = 0; i < n; ++i) {
    count_iterations(1);
    loop->items.clear();
    loop->items = {{"index", Value(i + 1)},
                   {"index0", Value(i)},
                   {"revindex", Value(n - i)},
                   {"revindex0", Value(n - i - 1)},
                   {"first", Value(i == 0)},
                   {"last", Value(i == n - 1)},
                   {"length", Value(n)},
                   {"depth", Value(depth + 1)},
                   {"depth0", Value(depth)},
                   {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
                   {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")},
                   {"cycle", cycle},
                   {"changed", changed}};
    auto iter_scope = std::make_shared<Scope>();
    iter_scope->parent = scope;
    assign_targets(*iter_scope, s.targets, items[i], config_.limits.max_output_bytes);
    iter_scope->vars["loop"] = Value(loop);
    const Flow f = exec(s.body, iter_scope, out);
    if (f == Flow::break_) break;
  }
}

Value Renderer::make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  // The macro is stored in the scope it closes over: holding that scope weakly
  // keeps the pair from owning each other (which would leak every render).
  std::weak_ptr<Scope> weak_scope = scope;
  return Value::function(s.kind == StmtKind::macro ? s.text : "caller", [this, &s, weak_scope](CallArgs& args) -> Value {
    DepthGuard guard(*this);
    auto local = std::make_shared<Scope>();
    local->parent = weak_scope.lock();
    if (!local->parent) fail(ErrorKind::type, "macro '" + s.text + "' called after its scope ended");
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.args.size(); ++i) {
      if (i < s.targets.size()) local->vars[s.targets[i]] = args.args[i];
      else varargs.push_back(args.args[i]);
    }
    auto kwargs = std::make_shared<DictObj>();
    for (auto& [k, v] : args.kwargs) {
      bool is_param = false;
      for (const auto& p : s.targets) is_param |= p == k;
      if (is_param) local->vars[k] = v;
      else if (k == "caller") local->vars["caller"] = v;
      else kwargs->set(k, v);
    }
    for (size_t i = 0; i < s.targets.size(); ++i) {
      if (local->vars.count(s.targets[i])) continue;
      local->vars[s.targets[i]] = s.defaults[i] ? eval(*s.defaults[i], local)
                                                : Value::undefined("parameter '" + s.targets[i] + "' was not provided");
    }
    local->vars["varargs"] = Value::tuple(std::move(varargs));
    local->vars["kwargs"] = Value(kwargs);
    std::string out;
    exec(s.body, local, out);
    return Value(std::move(out));
  });
}

CallArgs Renderer::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.children.size(); ++i) args.args.push_back(eval(*e.children[i], scope));
  for (const auto& [k, v] : e.kwargs) args.kwargs.emplace_back(k, eval(*v, scope));
  return args;
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_function()) return callee.function_obj().fn(args);
  if (callee.is_dict() && callee.dict_obj().call) return callee.dict_obj().call->fn(args);
  require_defined(callee);
  fail(ErrorKind::type, std::string("'") + callee.type_name() + "' object is not callable");
}

Value Renderer::apply_filter(const std::string& name, const Value& subject, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (!fn) fail(ErrorKind::syntax, "no filter named '" + name + "'");
  return fn(*this, subject, args);
}

bool Renderer::apply_test(const std::string& name, const Value& value, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (!fn) fail(ErrorKind::syntax, "no test named '" + name + "'");
  return fn(*this, value, args);
}

Value Renderer::eval_filter_chain(const Expr& e, const std::shared_ptr<Scope>& scope, const Value& subject) {
  const Value inner = e.children[0] ? eval_filter_chain(*e.children[0], scope, subject) : subject;
  CallArgs args = eval_args(e, scope, 1);
  return apply_filter(e.name, inner, args);
}

Value Renderer::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case ExprKind::literal: return e.value;
    case ExprKind::name: {
      const Value* v = scope->lookup(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::list:
    case ExprKind::tuple: {
      std::vector<Value> items;
      for (const auto& c : e.children) items.push_back(eval(*c, scope));
      return e.kind == ExprKind::tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case ExprKind::dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value k = eval(*e.children[i], scope);
        d.dict_obj().set(dict_key(k), eval(*e.children[i + 1], scope));
      }
      return d;
    }
    case ExprKind::attr: {
      Value obj = eval(*e.children[0], scope);
      require_defined(obj);
      return get_attribute(obj, e.name, config_.limits.max_output_bytes);
    }
    case ExprKind::item: {
      Value obj = eval(*e.children[0], scope);
      require_defined(obj);
      return get_item(obj, eval(*e.children[1], scope), config_.limits.max_output_bytes);
    }
    case ExprKind::slice: {
      Value obj = eval(*e.children[0], scope);
      require_defined(obj);
      Value bounds[3];
      for (int i = 0; i < 3; ++i)
        bounds[i] = e.children[i + 1] ? eval(*e.children[i + 1], scope) : Value::none();
      return slice_value(obj, bounds[0], bounds[1], bounds[2]);
    }
    case ExprKind::call: {
      Value callee = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, scope, 1);
      return call(callee, args);
    }
    case ExprKind::filter: {
      Value subject = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, scope, 1);
      return apply_filter(e.name, subject, args);
    }
    case ExprKind::test: {
      Value subject = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, scope, 1);
      return Value(apply_test(e.name, subject, args) != e.negated);
    }
    case ExprKind::unary: {
      Value v = eval(*e.children[0], scope);
      if (e.name == "not") return Value(!v.truthy());
      if (e.name == "-") return negate(v);
      require_defined(v);
      if (!v.is_number()) fail(ErrorKind::type, std::string("bad operand type for unary +: '") + v.type_name() + "'");
      return v.is_bool() ? Value(v.as_int()) : v;
    }
    case ExprKind::binary: {
      if (e.name == "and") {
        Value l = eval(*e.children[0], scope);
        return l.truthy() ? eval(*e.children[1], scope) : l;
      }
      if (e.name == "or") {
        Value l = eval(*e.children[0], scope);
        return l.truthy() ? l : eval(*e.children[1], scope);
      }
      Value l = eval(*e.children[0], scope);
      Value r = eval(*e.children[1], scope);
      if (e.name == "~") {
        std::string s = text_of(l);
        const std::string rs = text_of(r);
        check_size(s.size() + rs.size(), config_.limits.max_output_bytes);
        return Value(s + rs);
      }
      return binary_op(e.name, l, r, config_.limits.max_output_bytes);
    }
    case ExprKind::compare: {
      Value left = eval(*e.children[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.children[i + 1], scope);
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "==") ok = values_equal(left, right);
        else if (op == "!=") ok = !values_equal(left, right);
        else if (op == "<") ok = value_compare(left, right) < 0;
        else if (op == ">") ok = value_compare(left, right) > 0;
        else if (op == "<=") ok = value_compare(left, right) <= 0;
        else if (op == ">=") ok = value_compare(left, right) >= 0;
        else if (op == "in") ok = contains(right, left);
        else ok = !contains(right, left);  // not in
        if (!ok) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::cond: {
      if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
      if (e.children[2]) return eval(*e.children[2], scope);
      return Value::undefined("the inline if expression evaluated to false and no else section was defined");
    }
  }
  return Value();
}

}  // namespace seam::jinja
