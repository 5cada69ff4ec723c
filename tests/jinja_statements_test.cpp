// The Jinja engine's statements and whitespace control, each checked against
// what Python's jinja2 renders in transformers' environment (trim_blocks,
// lstrip_blocks, keep_trailing_newline=False).
#include "jinja_test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

TEST(JinjaStatements, IfElifElse) {
  const std::string t = "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(render(t, {{"x", 3}}), "big");
  EXPECT_EQ(render(t, {{"x", 1}}), "small");
  EXPECT_EQ(render(t, {{"x", 0}}), "none");
  EXPECT_EQ(render("{% if x %}a{% endif %}b"), "b");  // undefined is false
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render("{% for i in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}"),
            "1032TrueFalse3 2121FalseFalse3 3210FalseTrue3 ");
  EXPECT_EQ(render("{% for a in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('x','y') }} {% endfor %}"),
            "-2|x 1-3|y 2-|x ");
  EXPECT_EQ(render("{% for a in [1,1,2,2,1] %}{% if loop.changed(a) %}{{ a }}{% endif %}{% endfor %}"), "121");
}

TEST(JinjaStatements, ForElseFilterAndUnpacking) {
  EXPECT_EQ(render("{% for i in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for i in none_list %}x{% else %}undefined is empty{% endfor %}"), "undefined is empty");
  // The loop filter runs first: loop.length counts the kept items.
  EXPECT_EQ(render("{% for i in range(10) if i is odd %}{{ i }}/{{ loop.length }} {% endfor %}"), "1/5 3/5 5/5 7/5 9/5 ");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}), "b=1;a=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}), "ba");
  EXPECT_EQ(render("{% for c in 'hé!' %}[{{ c }}]{% endfor %}"), "[h][é][!]");
  EXPECT_EQ(render_error("{% for x in none %}{% endfor %}").message, "'NoneType' object is not iterable");
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in [1,2,3] %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}"), "13");
  EXPECT_EQ(render("{% for i in [1,2,3] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}"), "1");
}

TEST(JinjaStatements, RecursiveLoop) {
  const ordered_json tree = ordered_json::parse(R"([{"n": 1, "c": [{"n": 2, "c": [{"n": 3}]}]}, {"n": 4}])");
  EXPECT_EQ(render("{% for item in tree recursive %}[{{ item.n }}@{{ loop.depth }}{% if item.c %}{{ loop(item.c) }}"
                   "{% endif %}]{% endfor %}",
                   {{"tree", tree}}),
            "[1@1[2@2[3@3]]][4@1]");
}

TEST(JinjaStatements, SetScopesAndNamespace) {
  // A set inside a loop does not leak out (that is what namespace() is for); one inside an if does.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% if true %}{% set x = 5 %}{% endif %}{{ x }}"), "5");
  EXPECT_EQ(render("{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set messages = messages[1:] %}{{ messages|length }}", {{"messages", {1, 2, 3}}}), "2");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}").kind, jinja::ErrorKind::type);
}

TEST(JinjaStatements, BlockSet) {
  EXPECT_EQ(render("{% set x %}  block {{ 1 + 1 }} {% endset %}[{{ x }}]"), "[  block 2 ]");
  EXPECT_EQ(render("{% set x | upper | trim %} abc {% endset %}[{{ x }}]"), "[ABC]");
}

TEST(JinjaStatements, MacrosDefaultsVarargsAndCaller) {
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, b=5) }} {{ m('x', 'y') }}"),
            "1-2 1-5 x-y");
  EXPECT_EQ(render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"), "1(2,){'k': 3}");
  EXPECT_EQ(render("{% macro m() %}<{{ caller() }}>{% endmacro %}{% call m() %}inner{% endcall %}"), "<inner>");
  EXPECT_EQ(render("{% macro m() %}{% for i in [1,2] %}{{ caller(i) }}{% endfor %}{% endmacro %}"
                   "{% call(x) m() %}[{{ x }}]{% endcall %}"),
            "[1][2]");
  // A macro sees the template's variables, and its own sets stay inside it.
  EXPECT_EQ(render("{% macro m() %}{% set y = 2 %}{{ x }}{{ y }}{% endmacro %}{{ m() }}{{ y }}", {{"x", 1}}), "12");
}

TEST(JinjaStatements, FilterBlockWithAndGeneration) {
  EXPECT_EQ(render("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
  EXPECT_EQ(render("{% with x = 5, y = 6 %}{{ x }}{{ y }}{% endwith %}[{{ x }}]"), "56[]");
  EXPECT_EQ(render("{% generation %}gen {{ 1 }}{% endgeneration %}"), "gen 1");
  EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
  // lstrip_blocks and the - sign apply to raw's tags like any block tag.
  EXPECT_EQ(render("{% raw -%}  r\n  {% endraw %}x"), "r\nx");
  EXPECT_EQ(render("{%- raw %}r \n {%- endraw %}x"), "rx");
}

TEST(JinjaWhitespace, TrimBlocksAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc\n"), "a\n  b\nc");
  EXPECT_EQ(render("{% if true %}\n    x\n{% endif %}\n    {{ 'y' }}\n"), "    x\n    y");
  // Variable tags are not block tags: neither rule touches them.
  EXPECT_EQ(render("  {{ 'v' }}\n"), "  v");
  // Comments count as blocks for both rules.
  EXPECT_EQ(render("x\n  {# c #}\ny"), "x\ny");
}

TEST(JinjaWhitespace, MinusAndPlusModifiers) {
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b\n  {%+ endif %}\nc"), "ab\n  c");
  EXPECT_EQ(render("  {{- ' a ' -}}  \n{{ 'b' }}\n"), " a b");
  EXPECT_EQ(render("x {# comment #}\n  {#- c2 -#}  y"), "x y");
  // {%+ keeps the indentation lstrip_blocks would remove; +%} keeps the newline trim_blocks would.
  EXPECT_EQ(render("  {%+ if true +%}\nz{% endif %}"), "  \nz");
}

TEST(JinjaWhitespace, TrailingNewlineAndOptionsOff) {
  EXPECT_EQ(render("x\n"), "x");      // keep_trailing_newline=False drops one
  EXPECT_EQ(render("x\n\n"), "x\n");  // only one
  EXPECT_EQ(render("a\r\nb"), "a\nb");
  jinja::Options plain;
  plain.trim_blocks = false;
  plain.lstrip_blocks = false;
  plain.keep_trailing_newline = true;
  EXPECT_EQ(render("  {% if true %}\nx\n{% endif %}\n", {}, plain), "  \nx\n\n");
}

}  // namespace
}  // namespace seam::test
