#include "jinja/parser.h"

#include "jinja/error.h"

namespace seam::jinja {

namespace {

// Nesting deeper than this (parentheses, nested blocks) is refused, so a
// hostile template cannot overflow the stack of the recursive parser.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : toks_(t) {}

  Body parse_all() {
    Body body = parse_body({});
    if (peek().type != TokenType::eof) error("unexpected tag");
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxNesting) p.error("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void error(const std::string& msg) const {
    const Token& t = peek();
    std::string near = t.type == TokenType::eof ? "end of template" : t.value.empty() ? "tag end" : "'" + t.value + "'";
    fail(ErrorKind::syntax, "line " + std::to_string(t.line) + ": " + msg + " (at " + near + ")");
  }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).type == TokenType::op && peek(k).value == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).type == TokenType::name && peek(k).value == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error(std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (peek().type != TokenType::name) error("expected a name");
    return next().value;
  }
  void expect_block_end() {
    if (peek().type != TokenType::block_end) error("expected end of statement block");
    next();
  }

  ExprPtr node(ExprKind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = peek().line;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `ends` (left unconsumed: the
  // caller reads it), or the end of the template when `ends` is empty.
  Body parse_body(const std::vector<std::string>& ends) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::eof) {
        if (!ends.empty()) error("unexpected end of template, expected '" + ends.back() + "'");
        return body;
      }
      if (t.type == TokenType::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::text;
        s->line = t.line;
        s->text = next().value;
        body.push_back(std::move(s));
      } else if (t.type == TokenType::var_begin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::output;
        s->line = t.line;
        s->expr = parse_tuple();
        if (peek().type != TokenType::var_end) error("expected end of print statement");
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::block_begin) {
        if (peek(1).type == TokenType::name) {
          const std::string& tag = peek(1).value;
          for (const auto& e : ends)
            if (tag == e) return body;
          // A closing tag of another block: name the one this block needs.
          if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
            next();
            error("unexpected '" + tag + "'" + (ends.empty() ? std::string() : ", expected '" + ends.back() + "'"));
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        error("unexpected token");
      }
    }
  }

  void end_tag(const char* name) {
    next();  // block_begin
    if (!skip_name(name)) error(std::string("expected '") + name + "'");
    expect_block_end();
  }

  StmtPtr parse_statement() {
    auto s = std::make_unique<Stmt>();
    s->line = peek().line;
    const std::string tag = expect_name();
    if (tag == "if") {
      parse_if(*s);
    } else if (tag == "for") {
      s->kind = StmtKind::for_;
      s->targets = parse_targets();
      if (!skip_name("in")) error("expected 'in'");
      s->expr = parse_tuple(/*no_cond=*/true);
      if (skip_name("if")) s->expr2 = parse_expression();
      if (skip_name("recursive")) s->recursive = true;
      expect_block_end();
      s->body = parse_body({"else", "endfor"});  // the closing tag last: errors name it
      if (is_name("else", 1)) {
        end_tag("else");
        s->else_body = parse_body({"endfor"});
      }
      end_tag("endfor");
    } else if (tag == "set") {
      parse_set(*s);
    } else if (tag == "macro") {
      s->kind = StmtKind::macro;
      s->text = expect_name();
      parse_params(*s);
      expect_block_end();
      s->body = parse_body({"endmacro"});
      end_tag("endmacro");
    } else if (tag == "call") {
      s->kind = StmtKind::call_block;
      if (is_op("(")) parse_params(*s);
      s->expr = parse_expression();
      if (s->expr->kind != ExprKind::call) error("expected a call after 'call'");
      expect_block_end();
      s->body = parse_body({"endcall"});
      end_tag("endcall");
    } else if (tag == "filter") {
      s->kind = StmtKind::filter_block;
      s->expr2 = parse_filter_chain(nullptr);
      expect_block_end();
      s->body = parse_body({"endfilter"});
      end_tag("endfilter");
    } else if (tag == "with") {
      s->kind = StmtKind::with;
      while (peek().type != TokenType::block_end) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name());
        expect_op("=");
        s->defaults.push_back(parse_expression());
      }
      expect_block_end();
      s->body = parse_body({"endwith"});
      end_tag("endwith");
    } else if (tag == "generation") {
      s->kind = StmtKind::generation;
      expect_block_end();
      s->body = parse_body({"endgeneration"});
      end_tag("endgeneration");
    } else if (tag == "break" || tag == "continue") {
      s->kind = tag == "break" ? StmtKind::break_ : StmtKind::continue_;
      expect_block_end();
    } else {
      pos_ -= 1;
      error("unknown or unsupported tag '" + tag + "'");
    }
    return s;
  }

  void parse_if(Stmt& s) {
    s.kind = StmtKind::if_;
    s.expr = parse_tuple(/*no_cond=*/false);
    expect_block_end();
    s.body = parse_body({"elif", "else", "endif"});
    if (is_name("elif", 1)) {
      next();
      next();
      auto nested = std::make_unique<Stmt>();
      nested->line = peek().line;
      parse_if(*nested);  // consumes the endif
      s.else_body.push_back(std::move(nested));
      return;
    }
    if (is_name("else", 1)) {
      end_tag("else");
      s.else_body = parse_body({"endif"});
    }
    end_tag("endif");
  }

  void parse_set(Stmt& s) {
    // set ns.attr = expr | set a, b = expr | set name = expr | set name [| filters] %}body{% endset
    const std::string first = expect_name();
    if (skip_op(".")) {
      s.kind = StmtKind::set;
      s.targets.push_back(first);
      s.attr = expect_name();
      expect_op("=");
      s.expr = parse_tuple();
      expect_block_end();
      return;
    }
    s.targets.push_back(first);
    while (skip_op(",")) s.targets.push_back(expect_name());
    if (skip_op("=")) {
      s.kind = StmtKind::set;
      s.expr = parse_tuple();
      expect_block_end();
      return;
    }
    if (s.targets.size() != 1) error("expected '='");
    s.kind = StmtKind::set_block;
    if (skip_op("|")) {
      pos_ -= 1;
      s.expr2 = parse_filter_chain(nullptr);
    }
    expect_block_end();
    s.body = parse_body({"endset"});
    end_tag("endset");
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!skip_op(")")) {
      if (!s.targets.empty()) expect_op(",");
      if (skip_op(")")) break;
      s.targets.push_back(expect_name());
      if (skip_op("=")) s.defaults.push_back(parse_expression());
      else s.defaults.push_back(nullptr);
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    names.push_back(expect_name());
    while (skip_op(",")) {
      if (peek().type != TokenType::name || is_name("in")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  // A filter chain with no subject ({% filter upper|trim %}, {% set x | upper %}).
  ExprPtr parse_filter_chain(ExprPtr subject) {
    ExprPtr e = std::move(subject);
    bool first = e == nullptr;
    do {
      if (!first && !skip_op("|")) break;
      if (first && is_op("|")) next();
      first = false;
      e = parse_filter(std::move(e));
    } while (is_op("|"));
    return e;
  }

  // ---- expressions ----

  // expr[, expr...] -> a tuple when a comma is present.
  ExprPtr parse_tuple(bool no_cond = false) {
    auto first = no_cond ? parse_or() : parse_expression();
    if (!is_op(",")) return first;
    auto t = node(ExprKind::tuple);
    t->children.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().type == TokenType::block_end || peek().type == TokenType::var_end || is_op(")") || is_name("if"))
        break;
      t->children.push_back(no_cond ? parse_or() : parse_expression());
    }
    return t;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this);
    auto e = parse_or();
    while (is_name("if")) {
      next();
      auto c = node(ExprKind::cond);
      c->children.push_back(parse_or());
      c->children.push_back(std::move(e));
      if (skip_name("else")) c->children.push_back(parse_expression());
      else c->children.push_back(nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r) {
    auto b = node(ExprKind::binary);
    b->name = std::move(op);
    b->children.push_back(std::move(l));
    b->children.push_back(std::move(r));
    return b;
  }

  // One left-associative level, `operand (op operand)*`, for the operators `ops` (operator
  // tokens, or the names "and" / "or"); jinja2 folds every binary level to the left, ** too.
  template <typename Operand>
  ExprPtr left_assoc(std::initializer_list<const char*> ops, Operand operand) {
    auto e = operand();
    while (true) {
      const char* op = nullptr;
      for (const char* o : ops)
        if (is_op(o) || is_name(o)) op = o;
      if (!op) return e;
      next();
      e = binary(op, std::move(e), operand());
    }
  }

  ExprPtr parse_or() { return left_assoc({"or"}, [this] { return parse_and(); }); }
  ExprPtr parse_and() { return left_assoc({"and"}, [this] { return parse_not(); }); }
  ExprPtr parse_not() {
    if (is_name("not")) {
      next();
      auto u = node(ExprKind::unary);
      u->name = "not";
      u->children.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    auto first = parse_math1();
    ExprPtr c;
    while (true) {
      std::string op;
      if (peek().type == TokenType::op &&
          (peek().value == "==" || peek().value == "!=" || peek().value == "<" || peek().value == ">" ||
           peek().value == "<=" || peek().value == ">=")) {
        op = next().value;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!c) {
        c = node(ExprKind::compare);
        c->children.push_back(std::move(first));
      }
      c->ops.push_back(op);
      c->children.push_back(parse_math1());
    }
    return c ? std::move(c) : std::move(first);
  }
  ExprPtr parse_math1() { return left_assoc({"+", "-"}, [this] { return parse_concat(); }); }
  ExprPtr parse_concat() { return left_assoc({"~"}, [this] { return parse_math2(); }); }
  ExprPtr parse_math2() { return left_assoc({"*", "/", "//", "%"}, [this] { return parse_pow(); }); }
  ExprPtr parse_pow() {
    return left_assoc({"**"}, [this] { return parse_unary(true); });
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = node(ExprKind::unary);
      u->name = next().value;
      u->children.push_back(parse_unary(false));
      e = std::move(u);
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    if (t.type == TokenType::name) {
      next();
      const std::string& n = t.value;
      auto lit = node(ExprKind::literal);
      if (n == "true" || n == "True") lit->value = Value(true);
      else if (n == "false" || n == "False") lit->value = Value(false);
      else if (n == "none" || n == "None") lit->value = Value::none();
      else {
        auto e = node(ExprKind::name);
        e->name = n;
        return e;
      }
      return lit;
    }
    if (t.type == TokenType::string) {
      std::string s = next().value;
      while (peek().type == TokenType::string) s += next().value;  // adjacent literals concatenate
      auto lit = node(ExprKind::literal);
      lit->value = Value(std::move(s));
      return lit;
    }
    if (t.type == TokenType::integer || t.type == TokenType::floating) {
      next();
      auto lit = node(ExprKind::literal);
      lit->value = t.type == TokenType::integer ? Value(t.int_value) : Value(t.float_value);
      return lit;
    }
    if (skip_op("(")) {
      if (skip_op(")")) return node(ExprKind::tuple);
      auto e = parse_expression();
      if (is_op(",")) {
        auto tup = node(ExprKind::tuple);
        tup->children.push_back(std::move(e));
        while (skip_op(",")) {
          if (is_op(")")) break;
          tup->children.push_back(parse_expression());
        }
        e = std::move(tup);
      }
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto l = node(ExprKind::list);
      while (!skip_op("]")) {
        if (!l->children.empty()) {
          expect_op(",");
          if (skip_op("]")) break;
        }
        l->children.push_back(parse_expression());
      }
      return l;
    }
    if (skip_op("{")) {
      auto d = node(ExprKind::dict);
      while (!skip_op("}")) {
        if (!d->children.empty()) {
          expect_op(",");
          if (skip_op("}")) break;
        }
        d->children.push_back(parse_expression());
        expect_op(":");
        d->children.push_back(parse_expression());
      }
      return d;
    }
    error("unexpected token in expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (skip_op(".")) {
        auto a = node(ExprKind::attr);
        if (peek().type == TokenType::integer) {  // x.0 is x[0]
          a->kind = ExprKind::item;
          a->children.push_back(std::move(e));
          auto idx = node(ExprKind::literal);
          idx->value = Value(next().int_value);
          a->children.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->children.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (skip_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        auto c = node(ExprKind::call);
        c->children.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr subject) {
    ExprPtr parts[3];
    int n_colons = 0;
    while (!is_op("]")) {
      if (skip_op(":")) {
        if (++n_colons > 2) error("too many ':' in slice");
        continue;
      }
      if (parts[n_colons]) error("expected ':' or ']'");
      parts[n_colons] = parse_expression();
    }
    expect_op("]");
    if (n_colons == 0) {
      if (!parts[0]) error("expected a subscript");
      auto it = node(ExprKind::item);
      it->children.push_back(std::move(subject));
      it->children.push_back(std::move(parts[0]));
      return it;
    }
    auto sl = node(ExprKind::slice);
    sl->children.push_back(std::move(subject));
    for (auto& p : parts) sl->children.push_back(std::move(p));
    return sl;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
      if (!first) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      first = false;
      if (peek().type == TokenType::name && is_op("=", 1)) {
        std::string key = next().value;
        next();
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!call.kwargs.empty()) error("positional argument after keyword argument");
        call.children.push_back(parse_expression());
      }
    }
  }

  ExprPtr parse_filter(ExprPtr subject) {
    auto f = node(ExprKind::filter);
    f->name = expect_name();
    while (skip_op(".")) (f->name += '.') += expect_name();
    f->children.push_back(std::move(subject));
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        next();
        auto t = node(ExprKind::test);
        t->negated = skip_name("not");
        t->name = expect_name();
        while (skip_op(".")) (t->name += '.') += expect_name();
        t->children.push_back(std::move(e));
        const Token& a = peek();
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((a.type == TokenType::name || a.type == TokenType::string || a.type == TokenType::integer ||
                    a.type == TokenType::floating || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") && !is_name("in") &&
                   !is_name("not") && !is_name("recursive")) {
          if (is_name("is")) error("cannot chain multiple tests with 'is'");
          t->children.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        auto c = node(ExprKind::call);
        c->children.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace seam::jinja
