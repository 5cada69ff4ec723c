// Renderer: runs a parsed template against a scope of variables. It owns the
// bounds of one render (loop iterations, call depth, output size), so a
// template that loops or recurses without end fails with a clear error
// instead of hanging, and it is the face filters and tests use to call back
// into the engine (map calls a filter, select runs a test, ...).
#pragma once
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace seam::jinja {

struct Limits {
  size_t max_output_bytes = size_t{16} << 20;  // rendered text, and any string or list built on the way
  int64_t max_loop_iterations = 1'000'000;      // over the whole render, all loops together
  int max_call_depth = 100;                     // nested macro calls and recursive loop() calls
};

struct RenderConfig {
  Limits limits;
  // The time strftime_now() formats (local time); unset: the clock at the call.
  std::optional<std::tm> fixed_now;
};

// Variables of one scope; lookups walk to the enclosing scopes. A for-loop
// iteration, a macro call and a with block get their own scope (their sets do
// not leak out, as in jinja2); if blocks do not.
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* lookup(const std::string& name) const;
};

class Renderer {
 public:
  Renderer(const RenderConfig& config, std::shared_ptr<Scope> globals);

  // Renders `body` in the globals' scope.
  std::string render(const Body& body);

  Value apply_filter(const std::string& name, const Value& subject, CallArgs& args);
  bool apply_test(const std::string& name, const Value& value, CallArgs& args);
  Value call(const Value& callee, CallArgs& args);
  const RenderConfig& config() const { return config_; }
  void count_iterations(int64_t n);

 private:
  enum class Flow { normal, break_, continue_ };
  struct DepthGuard;

  Flow exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  void exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, const Value& iterable, int depth,
                std::string& out);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, Value value);
  Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_filter_chain(const Expr& e, const std::shared_ptr<Scope>& scope, const Value& subject);
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope, size_t first);
  void append(std::string& out, const std::string& text) const;
  // str(v) for the output and for ~, held to the output size limit while it is built.
  std::string text_of(const Value& v) const { return v.str(config_.limits.max_output_bytes); }

  RenderConfig config_;
  std::shared_ptr<Scope> globals_;
  int64_t n_iterations_ = 0;
  int call_depth_ = 0;
};

// Assigns `value` to `names` (one name, or unpacks a list over several; max_size as iterate's).
void assign_targets(Scope& scope, const std::vector<std::string>& names, const Value& value, size_t max_size);
// The items a for loop visits: a list's items, a dict's keys, a string's characters. A string's
// characters are a Value each (copy_bytes): a string whose characters would take more than
// `max_size` (the output size limit) fails before they are built, as 'x' * 10**7 iterated would
// otherwise take ~100 bytes a character.
std::vector<Value> iterate(const Value& v, size_t max_size);

}  // namespace seam::jinja
