// The bounds of a render and the errors of bad templates: a template that
// loops or recurses without end, or renders too much, fails fast with a
// clear message (the server must never hang on a model's template); a
// template that does not parse names the line.
#include <chrono>

#include "jinja_test_util.h"

namespace seam::test {
namespace {

jinja::Options small_limits() {
  jinja::Options o;
  o.render.limits.max_loop_iterations = 1000;
  o.render.limits.max_call_depth = 20;
  o.render.limits.max_output_bytes = 4096;
  return o;
}

TEST(JinjaLimits, LoopIterationsAreBoundedOverTheWholeRender) {
  const auto o = small_limits();
  EXPECT_EQ(render("{% for i in range(1000) %}{% endfor %}done", {}, o), "done");
  // Nested loops count together: 40 x 40 = 1600 iterations > 1000.
  const RenderFailure f = render_error("{% for i in range(40) %}{% for j in range(40) %}{% endfor %}{% endfor %}", {}, o);
  EXPECT_EQ(f.kind, jinja::ErrorKind::limit);
  EXPECT_NE(f.message.find("1000 loop iterations"), std::string::npos) << f.message;
  // A range larger than the bound is refused before it is built.
  EXPECT_EQ(render_error("{% for i in range(10**12) %}{% endfor %}", {}, o).kind, jinja::ErrorKind::limit);
}

TEST(JinjaLimits, EndlessRecursionFailsFast) {
  const auto start = std::chrono::steady_clock::now();
  const RenderFailure f = render_error("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", {}, small_limits());
  EXPECT_EQ(f.kind, jinja::ErrorKind::limit);
  EXPECT_NE(f.message.find("recursion depth"), std::string::npos) << f.message;
  // A recursive loop over a structure that contains itself cannot be written in JSON, but
  // a recursive loop that always recurses can: it hits the same bound.
  const RenderFailure g = render_error("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", {}, small_limits());
  EXPECT_EQ(g.kind, jinja::ErrorKind::limit);
  // The default bounds also stop it (no stack overflow), quickly.
  EXPECT_EQ(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}").kind, jinja::ErrorKind::limit);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(JinjaLimits, OutputSizeIsBounded) {
  const auto o = small_limits();
  EXPECT_EQ(render("{% for i in range(100) %}0123456789{% endfor %}", {}, o).size(), 1000u);
  EXPECT_EQ(render_error("{% for i in range(500) %}0123456789{% endfor %}", {}, o).kind, jinja::ErrorKind::limit);
  // Strings and lists built in expressions count too, before they are allocated.
  EXPECT_EQ(render_error("{% set s = 'x' * 10**9 %}", {}, o).kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{% set s = 'x' * 4000 %}{% set t = s ~ s %}", {}, o).kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", {}, o).kind,
            jinja::ErrorKind::limit);
}

TEST(JinjaLimits, ANamespaceThatContainsItselfCannotOverflowTheStack) {
  const RenderFailure f = render_error("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns }}");
  EXPECT_EQ(f.kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}").kind, jinja::ErrorKind::type);
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  auto parse_error = [](const std::string& text) -> std::string {
    try {
      jinja::Template::parse(text);
    } catch (const jinja::TemplateError& e) {
      EXPECT_EQ(e.kind(), jinja::ErrorKind::syntax) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "parsed: " << text;
    return "";
  };
  EXPECT_NE(parse_error("a\n{% if x %}b").find("expected 'endif'"), std::string::npos);
  EXPECT_NE(parse_error("{{ 1 + }}").find("line 1"), std::string::npos);
  EXPECT_NE(parse_error("x\n\n{{ 'unterminated }}").find("line 3"), std::string::npos);
  EXPECT_NE(parse_error("{% include 'x.jinja' %}").find("unsupported tag 'include'"), std::string::npos);
  EXPECT_NE(parse_error("{% for x in y %}{% endif %}").find("expected 'endfor'"), std::string::npos);
  EXPECT_NE(parse_error("{# open comment").find("missing end of comment"), std::string::npos);
  EXPECT_NE(parse_error("{{ x").find("unclosed tag"), std::string::npos);
  // Nesting is bounded in the parser too, so a hostile template cannot overflow its stack.
  EXPECT_NE(parse_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nested too deeply"), std::string::npos);
}

TEST(JinjaErrors, ATemplateIsReusableAndThreadSafeAfterAnError) {
  const auto t = jinja::Template::parse("{% if fail %}{{ raise_exception('no') }}{% endif %}{{ x }}");
  EXPECT_THROW(t.render(nlohmann::json{{"fail", true}}), jinja::TemplateError);
  EXPECT_EQ(t.render(nlohmann::json{{"fail", false}, {"x", 1}}), "1");
  // Top-level sets of one render do not leak into the next.
  const auto s = jinja::Template::parse("{{ y }}{% set y = 2 %}");
  EXPECT_EQ(s.render(nlohmann::json::object()), "");
  EXPECT_EQ(s.render(nlohmann::json::object()), "");
}

}  // namespace
}  // namespace seam::test
