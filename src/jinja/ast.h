// The syntax tree of a template: expressions (Expr) and statements (Stmt).
// One generic node type each, told apart by `kind`; the fields a kind uses are
// listed beside it. Children that are optional (a slice bound, an else branch)
// are null when absent.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace seam::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  literal,   // value
  name,      // name
  list,      // children
  tuple,     // children (evaluated as a list)
  dict,      // children: key, value, key, value, ...
  attr,      // children[0] . name
  item,      // children[0] [ children[1] ]
  slice,     // children[0] [ children[1] : children[2] : children[3] ]  (bounds may be null)
  call,      // children[0] ( children[1..], kwargs )
  filter,    // children[0] | name ( children[1..], kwargs ); children[0] null in a filter block
  test,      // children[0] is [not] name ( children[1..], kwargs ); negated
  unary,     // name ("-", "+", "not") children[0]
  binary,    // children[0] name children[1]; name: + - * / // % ** ~ and or
  compare,   // children[0] ops[0] children[1] ops[1] ... (chained, as Python)
  cond,      // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  text,        // text
  output,      // {{ expr }}
  if_,         // if expr: body else else_body (elif is a nested if in else_body)
  for_,        // for targets in expr [if expr2] [recursive]: body else else_body
  set,         // set targets (or targets[0].attr) = expr
  set_block,   // set targets[0] [| expr2 filter chain]: body
  macro,       // macro name(params = defaults): body
  call_block,  // call(params) expr: body  (body is the caller)
  filter_block,// filter expr2 chain: body
  with,        // with targets = values: body
  generation,  // generation: body (transformers' assistant mask tag; renders its body)
  break_,
  continue_,
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                 // text
  std::vector<std::string> targets; // for/set/with targets, macro/call parameter names
  std::string attr;                 // set ns.attr
  ExprPtr expr;                     // the main expression
  ExprPtr expr2;                    // for: the loop filter; set_block/filter_block: the filter chain
  std::vector<ExprPtr> defaults;    // macro/call parameter defaults (null = required); with: values
  bool recursive = false;
  Body body;
  Body else_body;
};

}  // namespace seam::jinja
