// Expressions with Python's value semantics: how values print (None, True,
// repr() of lists and dicts, float repr), operators and their type errors,
// attribute and item lookup (dict methods before keys), slices, `~`, `in`,
// the inline if, and the str / dict / list methods templates call.
#include "jinja_test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

TEST(JinjaValues, PrintLikePython) {
  EXPECT_EQ(render("{{ none }} {{ None }} {{ true }} {{ False }} {{ x }}|"), "None None True False |");
  EXPECT_EQ(render("{{ [1, 'a', none, true] }} {{ {'a': 1, 'b': [2.5]} }}"), "[1, 'a', None, True] {'a': 1, 'b': [2.5]}");
  EXPECT_EQ(render("{{ (1, 2) }} {{ (1,) }} {{ () }}"), "(1, 2) (1,) ()");
  EXPECT_EQ(render("{{ [\"it's\", 'q\"', 'both\\'\"', '\\n\\t\\\\'] }}"), R"(["it's", 'q"', 'both\'"', '\n\t\\'])");
  EXPECT_EQ(render("{{ ['é', '\\u200b', 'a\\xa0b'] }}"), "['é', '\\u200b', 'a\\xa0b']");
  // The input's JSON objects keep their member order.
  EXPECT_EQ(render("{{ m }}", {{"m", ordered_json::parse(R"({"z": null, "a": [true, 1.0]})")}}), "{'z': None, 'a': [True, 1.0]}");
}

TEST(JinjaValues, FloatsPrintAsPythonRepr) {
  EXPECT_EQ(render("{{ 1.0 }} {{ 1.5e-7 }} {{ 1e16 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 1e-4 }} {{ 0.00001 }} {{ -2.50 }}"),
            "1.0 1.5e-07 1e+16 1000000000000000.0 0.30000000000000004 0.3333333333333333 0.0001 1e-05 -2.5");
}

TEST(JinjaOperators, Arithmetic) {
  EXPECT_EQ(render("{{ 10/4 }} {{ 8/4 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2**10 }} {{ 2 * 3 + 4 }} {{ -2 ** 2 }}"),
            "2.5 2.0 3 -4 2 -2 1024 10 4");
  EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 1 + 2.5 }} {{ true + 1 }}"), "ababab [1, 2] ab 3.5 2");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ [1] ~ x }} {{ (1 + 2) ~ 3 }}"), "a1None[1] 33");
  // `~` binds tighter than `+`, as in jinja2's grammar: 1 + (2 ~ 3) is int + str.
  EXPECT_EQ(render_error("{{ 1 + 2 ~ 3 }}").message, "unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render("{{ '%s and %r' % ('a', 'b') }} {{ '%d%%' % 5 }}"), "a and 'b' 5%");
  EXPECT_EQ(render("{{ '%.2f' % 3.14159 }} {{ '%5s|%-3d|' % ('ab', 7) }} {{ '%x' % 255 }} {{ '%s' % [1, 2] }} {{ '%03d' % 7 }}"),
            "3.14    ab|7  | ff [1, 2] 007");
  EXPECT_EQ(render_error("{{ '%s %s' % ('a',) }}").message, "not enough arguments for format string");
}

TEST(JinjaOperators, TypeErrorsCarryPythonsMessage) {
  EXPECT_EQ(render_error("{{ 'a' + 1 }}").message, "can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render_error("{{ 'a' + [1] }}").message, "can only concatenate str (not \"list\") to str");
  EXPECT_EQ(render_error("{{ 1 + 'a' }}").message, "unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render_error("{{ 1 / 0 }}").message, "division by zero");
  EXPECT_EQ(render_error("{{ 1 < 'a' }}").message, "'<' not supported between instances of 'int' and 'str'");
  // Undefined prints as "" but refuses arithmetic, with jinja2's hint.
  const RenderFailure u = render_error("{{ m['content'] + 'x' }}", {{"m", {{"role", "user"}}}});
  EXPECT_EQ(u.kind, jinja::ErrorKind::undefined);
  EXPECT_EQ(u.message, "'dict object' has no attribute 'content'");
  EXPECT_EQ(render_error("{{ x.y }}").message, "'x' is undefined");
}

TEST(JinjaOperators, ComparisonsLogicAndMembership) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] == [1,2] }} {{ none == none }}"),
            "True False True True True True True");
  EXPECT_EQ(render("{{ 'a' in 'cat' }} {{ 1 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not 1 == 2 }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 1 in x }} {{ (1, 2) * 2 }} {{ (1,) + (2,) }} {{ (1, 2) == [1, 2] }}"), "False (1, 2, 1, 2) (1, 2) False");
  EXPECT_EQ(render("{{ x and 'a' or 'b' }} {{ 0 or none }} {{ '' or [] }} {{ 1 and 2 }}", {{"x", 1}}), "a None [] 2");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }} [{{ 'yes' if not x }}]", {{"x", 1}}), "yes []");
}

TEST(JinjaLookup, AttributesItemsAndDictMethods) {
  const ordered_json ctx = {{"m", {{"role", "user"}, {"items", 3}}}, {"l", {10, 20, 30}}};
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m.get('missing', 'dflt') }} {{ m.get('role') }} {{ m.get('x') }}", ctx),
            "user user dflt user None");
  // `m.items` is the dict method; `m['items']` is the key.
  EXPECT_EQ(render("{{ m['items'] }} {{ m.items()|list }} {{ m.keys()|list }} {{ m.values()|list }}", ctx),
            "3 [('role', 'user'), ('items', 3)] ['role', 'items'] ['user', 3]");
  EXPECT_EQ(render("{{ l[0] }} {{ l.1 }} {{ l[-1] }} [{{ l[5] }}] {{ l.index(20) }} {{ l.count(7) }}", ctx), "10 20 30 [] 1 0");
  EXPECT_EQ(render("[{{ m.missing }}] [{{ none.x }}]", ctx), "[] []");
  // The sandbox: no private attributes, no mutation of lists and dicts.
  EXPECT_EQ(render("[{{ m.__class__ }}]", ctx), "[]");
  EXPECT_EQ(render_error("{{ l.append(4) }}", ctx).message, "access to attribute 'append' of 'list' object is unsafe.");
}

TEST(JinjaLookup, Slices) {
  EXPECT_EQ(render("{{ [1,2,3,4,5][1:3] }} {{ [1,2,3,4,5][::-1] }} {{ [1,2,3,4,5][1:-1:2] }} {{ [1,2][5:] }} {{ [1,2,3][:-1] }}"),
            "[2, 3] [5, 4, 3, 2, 1] [2, 4] [] [1, 2]");
  // Strings slice and index by code point.
  EXPECT_EQ(render("{{ 'héllo'[1:4] }} {{ 'héllo'[-1] }} {{ 'héllo'[1] }} {{ 'abc'[-10:2] }} [{{ 'abc'[5:] }}] {{ 'abc'[::-1] }}"),
            "éll o é ab [] cba");
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("[{{ '  x  '.strip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '  x '.lstrip() }}] [{{ ' x  '.rstrip() }}]"),
            "[x] [a] [x ] [ x]");
  EXPECT_EQ(render("{{ ' a b  c '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }}"),
            "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c'] ['a,b', 'c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.find('c') }} {{ 'abc'.find('z') }}"),
            "True True bba 2 -1");
  EXPECT_EQ(render("{{ 'hello world'.title() }} {{ \"they're\".title() }} {{ 'hELLO'.capitalize() }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }} {{ 'aB'.swapcase() }}"),
            "Hello World They'Re Hello ABab Ab");
  EXPECT_EQ(render("{{ '-'.join(['x','y']) }} {{ 'x'.zfill(3) }} {{ 'abab'.count('a') }} {{ 'A1'.isalnum() }} {{ '12'.isdigit() }} {{ ' '.isspace() }}"),
            "x-y 00x 2 True True True");
  EXPECT_EQ(render("{{ '{} {}'.format(1, 'x') }} {{ '{b}-{a}'.format(a=1, b=2) }} {{ 'a\\nb\\r\\nc'.splitlines() }}"),
            "1 x 2-1 ['a', 'b', 'c']");
  // Unicode whitespace is whitespace to strip() and split(), as in Python.
  EXPECT_EQ(render("[{{ ' \\u00a0x\\u3000 '.strip() }}] {{ ' x \\u2003y '.split() }}"), "[x] ['x', 'y']");
  EXPECT_EQ(render("{%- set c = m.split('</think>')[-1].lstrip('\\n') %}[{{ c }}]", {{"m", "<think>\nhm\n</think>\n\nanswer"}}),
            "[answer]");
}

TEST(JinjaBuiltins, GlobalsOfTheEnvironment) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }}"), "[0, 1, 2] [1, 4, 7] [5, 3, 1]");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }} {% set ns = namespace(a=1) %}{{ ns.a }}"), "{'a': 1, 'b': 'x'} 1");
  EXPECT_EQ(render("{% set j = joiner('|') %}{% for i in [1,2,3] %}{{ j() }}{{ i }}{% endfor %}"), "1|2|3");
  EXPECT_EQ(render("{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}"), "abab");
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }} / {{ strftime_now('%B %d, %Y %A %H:%M') }}"),
            "26 Jul 2026 / July 26, 2026 Sunday 00:00");
  const RenderFailure raised = render_error("{{ raise_exception('Roles must alternate: ' ~ 2) }}");
  EXPECT_EQ(raised.kind, jinja::ErrorKind::raised);
  EXPECT_EQ(raised.message, "Roles must alternate: 2");
}

}  // namespace
}  // namespace seam::test
