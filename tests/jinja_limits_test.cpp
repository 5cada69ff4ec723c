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

// `text` fails under small_limits() with the output size limit's own error (that of 'x' * 10**12);
// `label` names the case in a failure. `w` is 2**62 in the context.
void expect_size_limit(const std::string& text, const std::string& label) {
  const RenderFailure f = render_error(text, {{"w", int64_t{1} << 62}}, small_limits());
  EXPECT_EQ(f.kind, jinja::ErrorKind::limit) << label << ": " << f.message;
  EXPECT_NE(f.message.find("grew past the output size limit (4096 bytes)"), std::string::npos) << label << ": " << f.message;
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

// A width (or a count, an indent, a precision) is an integer the template or its arguments choose,
// and the result's size follows it whatever the input: each such path is held to the output size
// limit before it allocates, with the error of 'x' * 10**12.
TEST(JinjaLimits, WidthDrivenPaddingIsBoundedByTheOutputSize) {
  const auto o = small_limits();
  const std::vector<std::string> paths = {
      "{{ 'x'.center(W) }}", "{{ 'x'.ljust(W) }}", "{{ 'x'.rjust(W, '\u00e9') }}", "{{ '-1'.zfill(W) }}",
      "{{ 'x'|center(W) }}", "{{ 'x'|indent(W) }}", "{{ 'a\nb'|indent(W, true) }}", "{{ [1]|batch(W, 0)|list }}",
      "{{ {'a': [1]}|tojson(indent=W) }}", "{{ 'ab' * W }}", "{{ [1, 2, 3, 4] * W }}",
      // Format specs and printf-style fields, with the width (or a float's precision) spliced in.
      "{{ ('{:>' ~ W ~ '}').format(1) }}", "{{ ('{:' ~ W ~ '}').format('x') }}", "{{ ('{:\u00e9^' ~ W ~ '}').format('x') }}",
      "{{ ('{:0' ~ W ~ ',}').format(1) }}", "{{ ('{:.' ~ W ~ 'f}').format(1.5) }}", "{{ ('{:.' ~ W ~ 'g}').format(1.5) }}",
      "{{ ('%' ~ W ~ 'd') % 1 }}", "{{ ('%-' ~ W ~ 's') % 'x' }}", "{{ ('%.' ~ W ~ 'f') % 1.5 }}", "{{ ('%' ~ W ~ 'd')|format(1) }}",
  };
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& path : paths) {
    for (const std::string& width : {"10**12", "2**62", "w", "4097"}) {
      std::string text = path;
      text.replace(text.find('W'), 1, width);
      expect_size_limit(text, text);
    }
  }
  // Refused before anything is allocated: no terabyte string is built on the way.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The bound is the result's size in bytes: a 2-byte fill reaches it at half the width.
  EXPECT_EQ(render("{{ 'x'.center(4096)|length }} {{ 'x'.center(2048, '\u00e9')|length }}", {}, o), "4096 2048");
  EXPECT_EQ(render_error("{{ 'x'.center(2049, '\u00e9') }}", {}, o).kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render("{{ ('%4096d' % 1)|length }} {{ ('{:>4096}'.format(1))|length }} {{ 'x'|indent(4095, true)|length }}", {}, o),
            "4096 4096 4096");
  // The default limit (16 MiB) applies without options too.
  EXPECT_EQ(render_error("{{ 'x'.center(10**12) }}").kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{{ '{:>1000000000000}'.format(1) }}").kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{{ '%1000000000000d' % 1 }}").kind, jinja::ErrorKind::limit);
}

// Under the limit, the padding paths are Python's (expected strings from python3 / jinja2).
TEST(JinjaLimits, PaddingUnderTheLimitIsPythons) {
  const auto o = small_limits();
  EXPECT_EQ(render("{{ 'ab'.center(7, '*') }}|{{ 'ab'.center(6, '*') }}|{{ 'abc'.center(6) }}|{{ 'ab'.ljust(5, '-') }}|"
                   "{{ 'ab'.rjust(5) }}|{{ 'abc'.center(2) }}", {}, o),
            "***ab**|**ab**| abc  |ab---|   ab|abc");
  EXPECT_EQ(render("{{ '-42'.zfill(6) }}|{{ '+7'.zfill(4) }}|{{ 'abc'.zfill(2) }}|{{ '\u00e9'.center(4, '\u00fc') }}|[{{ 'ab'|center(6) }}]", {}, o),
            "-00042|+007|abc|\u00fc\u00e9\u00fc\u00fc|[  ab  ]");
  EXPECT_EQ(render("{{ '{:>6}'.format(1) }}|{{ '{:*^7}'.format('ab') }}|{{ '{:08.3f}'.format(-3.14159) }}|{{ '{:010,}'.format(-1) }}|"
                   "{{ '{:010,.2f}'.format(1234.5) }}|{{ '{:012_x}'.format(255) }}|{{ '{:04,}'.format(1) }}", {}, o),
            "     1|**ab***|-003.142|-0,000,001|001,234.50|00_0000_00ff|0,001");
  // A string's precision only cuts, however large; the width is in code points.
  EXPECT_EQ(render("{{ '{:.2}'.format('abcdef') }}|{{ '{:.1000000000000}'.format('ab') }}|{{ '{:\u00e9<4}'.format('x') }}", {}, o),
            "ab|ab|x\u00e9\u00e9\u00e9");
  EXPECT_EQ(render("{{ '%5d|%-4s|%.3f|%05x' % (42, 'ab', 1.5, 255) }}|{{ '%-5s|' % '\u00e9' }}{{ '%5.1s|' % '\u00e9a' }}"
                   "{{ '%.0s|' % 'ab' }}{{ '%5r' % 'a' }}", {}, o),
            "   42|ab  |1.500|000ff|\u00e9    |    \u00e9||  'a'");
  // Fields wider than a fixed buffer are whole.
  EXPECT_EQ(render("{{ ('%600d' % 1)|length }} {{ ('%-600s|' % 'a')|length }} {{ '{:>600}'.format(1)|length }}", {}, o), "600 601 600");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent(3) }}|{{ 'a\\nb'|indent(2, true, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}", {}, o),
            "a\n   b\n\n   c|  a\n  b|a\n> \n> b");
  EXPECT_EQ(render("{{ [1, 2, 3]|batch(2, 'x')|list }} {{ [1, 2, 3, 4, 5]|batch(3, 0)|list }} {{ [1]|batch(10**12)|list }}", {}, o),
            "[[1, 2], [3, 'x']] [[1, 2, 3], [4, 5, 0]] [[1]]");
  EXPECT_EQ(render("{{ {'a': [1, {'b': 2}]}|tojson(indent=2) }}", {}, o), "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ]\n}");
  EXPECT_EQ(render("{{ 'a-b-c'.replace('-', '+', 1) }}|{{ 'ab'.replace('', '.') }}|{{ 'aaa'|replace('a', 'bb') }}|"
                   "{{ ', '.join(['x', 'y']) }}|{{ '{0}{0}'.format('ab') }}", {}, o),
            "a+b-c|.a.b.|bbbbbb|x, y|abab");
}

// Results whose size is the product of two inputs (each under the limit) are held to it too.
TEST(JinjaLimits, MultipliedSizesAreBounded) {
  const auto o = small_limits();
  for (const std::string text : {"{{ ('x' * 100).replace('', 'y' * 100) }}", "{{ ('x' * 100)|replace('x', 'y' * 100) }}",
                                 "{{ ('x' * 100).join(['a'] * 100) }}", "{{ ('{0}' * 100).format('y' * 100) }}",
                                 "{{ (['y' * 100] * 100)|tojson }}", "{{ [1, 2, 3]|tojson(separators=('x' * 3000, ':')) }}",
                                 "{{ [[[[[[1]]]]]]|tojson(indent='x' * 300) }}"}) {
    const RenderFailure f = render_error(text, {}, o);
    EXPECT_EQ(f.kind, jinja::ErrorKind::limit) << text << ": " << f.message;
  }
}

// Lists share their items, so a list can be a few KB in memory and gigabytes in text: W below is
// 30**4 references to one 4000-byte string (3.2 GB printed). Every path that turns a value into
// text holds it to the output size limit as it grows, with the error of 'x' * 10**12, instead of
// building the whole text first.
TEST(JinjaLimits, TheTextOfAValueIsBoundedByTheOutputSize) {
  const auto o = small_limits();
  const std::string big = "{% set s = 'x' * 4000 %}{% set W = [[[[[s]] * 30] * 30] * 30] * 30 %}";
  // Building W is within the limit: only printing it is not.
  EXPECT_EQ(render(big + "{{ W|length }} {{ W[0][0][0][0][0]|length }}", {}, o), "30 4000");
  const std::vector<std::string> paths = {
      "{{ W }}", "{{ {'k': W} }}", "{{ (W,) }}", "{{ ns }}", "{% filter upper %}{{ W }}{% endfilter %}",
      "{{ W|string }}", "{{ W|pprint }}", "{{ W|upper }}", "{{ W|trim }}", "{{ W|e }}", "{{ W|replace('x', 'y') }}",
      "{{ W|join(', ') }}", "{{ [W]|join }}", "{{ ['a', 'b']|join(W) }}", "{{ W ~ '' }}", "{{ 'a' ~ W }}",
      "{{ '%s' % (W,) }}", "{{ '%r' % (W,) }}", "{{ '%s'|format(W) }}", "{{ '{}'.format(W) }}", "{{ '{!r}'.format(W) }}",
      "{{ '{!s}'.format(W) }}", "{{ W|tojson }}", "{{ {'k': W}|tojson(indent=1) }}", "{{ W is lower }}",
      "{{ [1].index(W) }}", "{{ {}[W] }}", "{{ raise_exception(W) }}", "{{ joiner(W)() }}",
      "{{ [{'a': 1}]|map(attribute=W)|list }}", "{{ [1]|select(W)|list }}",
  };
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& path : paths) {
    expect_size_limit(big + "{% set ns = namespace(w=W) %}" + path, path);
  }
  // Each fails within the first 4 KB of text, not after 3.2 GB of it.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // The limit is the text's size: a list whose text is just 4096 bytes prints, one more byte fails.
  const std::string fits = "{% set l = ['x' * 4092] %}";  // ['xxx...'] is 4096 bytes
  EXPECT_EQ(render(fits + "{{ l|string|length }} {{ (l ~ '')|length }} {{ '{}'.format(l)|length }}", {}, o), "4096 4096 4096");
  EXPECT_EQ(render_error(fits + "{{ l ~ '!' }}", {}, o).kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{% set l = ['x' * 4093] %}{{ l }}", {}, o).kind, jinja::ErrorKind::limit);
  // The default limit (16 MiB) applies without options too.
  EXPECT_EQ(render_error("{% set s = 'x' * 4000 %}{{ [[[[[s]] * 30] * 30] * 30] * 30 }}").kind, jinja::ErrorKind::limit);
}

// Under the limit, the text of nested values is Python's (expected strings from python3 / jinja2).
TEST(JinjaLimits, TheTextOfAValueUnderTheLimitIsPythons) {
  const auto o = small_limits();
  const std::string v = "{% set v = [[1, 'a'], {'k': (2,), 3: none, 1.5: [true, false]}, \"it's\", '\"q\"', '\u00e9\\n\\t\\\\', 1e16, ()] %}";
  const std::string printed = "[[1, 'a'], {'k': (2,), 3: None, 1.5: [True, False]}, \"it's\", '\"q\"', '\u00e9\\n\\t\\\\', 1e+16, ()]";
  EXPECT_EQ(render(v + "{{ v }}|{{ v|string }}", {}, o), printed + "|" + printed);
  const std::string w = "{% set v = [[1, 'a'], {'k': (2,), 3: none}] %}";
  EXPECT_EQ(render(w + "{{ v|join('; ') }}|{{ [[1], (2, 'b'), {'c': 'd'}]|join }}|{{ v ~ '!' }}|{{ 1 ~ (1,) ~ none }}", {}, o),
            "[1, 'a']; {'k': (2,), 3: None}|[1](2, 'b'){'c': 'd'}|[[1, 'a'], {'k': (2,), 3: None}]!|1(1,)None");
  EXPECT_EQ(render(w + "{{ '%s|%r' % (v, v) }}|{{ '%s'|format(v) }}|{{ '{}|{!r}|{!s}'.format(v, 'x', v) }}|{{ v|tojson }}", {}, o),
            "[[1, 'a'], {'k': (2,), 3: None}]|[[1, 'a'], {'k': (2,), 3: None}]|[[1, 'a'], {'k': (2,), 3: None}]|"
            "[[1, 'a'], {'k': (2,), 3: None}]|'x'|[[1, 'a'], {'k': (2,), 3: None}]|[[1, \"a\"], {\"k\": [2], \"3\": null}]");
  EXPECT_EQ(render("{% set ns = namespace(a=[1, 'b']) %}{{ ns }}|{{ [ns.a]|string }}|{{ {'x': [(1,)]}|tojson }}", {}, o),
            "<Namespace {'a': [1, 'b']}>|[[1, 'b']]|{\"x\": [[1]]}");
  EXPECT_EQ(render("{{ {0: 'a', none: [1.0, -0.0]} }}|{{ {'a': {'b': {}}}|string }}|{{ [{'k': ('x', 'y')}]|tojson(indent=1) }}", {}, o),
            "{0: 'a', None: [1.0, -0.0]}|{'a': {'b': {}}}|[\n {\n  \"k\": [\n   \"x\",\n   \"y\"\n  ]\n }\n]");
  EXPECT_EQ(render("{{ [[1], [2, 3]]|join(', ', attribute=0) }}|{{ ['a', ['b']]|upper }}|{{ [1, [2]] is lower }}", {}, o),
            "1, 2|['A', ['B']]|False");
}

// A list built by repetition holds copies of its items: it is held to the limit in the bytes they
// take (sizeof(Value) each, plus a string's text), as a string is in its bytes, not in its count
// of items ([0] * 16000000 is 16M items under a 16 MiB limit, but over a GB of memory).
TEST(JinjaLimits, ListsBuiltByRepetitionAreBoundedInBytes) {
  const auto o = small_limits();
  for (const std::string text : {"{{ ([0] * 100)|length }}", "{{ (['x' * 100] * 30)|length }}",
                                 "{% set s = 'x' * 4000 %}{{ ([s] * 4000)|string }}", "{% set s = 'x' * 4000 %}{{ [s] * 4000 }}",
                                 "{% set l = [0] * 30 %}{{ (l + l)|length }}", "{{ [1]|batch(100, 0)|list }}",
                                 "{{ ((1,) * 2**62)|length }}", "{{ ([none] * w)|length }}"})
    expect_size_limit(text, text);
  // A few dozen items fit a 4 KB limit; a list of lists repeats references, not the lists' items.
  EXPECT_EQ(render("{{ ([0] * 30)|length }} {{ ([[0] * 30] * 30)|length }} {{ ([0] * 15 + [1] * 15)|length }} "
                   "{{ [1, 2]|batch(3, 'x')|list }} {{ (1,) * 2 }}", {}, o),
            "30 30 30 [[1, 2, 'x']] (1, 1)");
  // Ordinary templates' lists (thousands of items) fit the default limit; [0] * 16000000 does not.
  EXPECT_EQ(render("{{ ([0] * 5000)|length }} {{ (['ab'] * 3000 + [0] * 3000)|length }}"), "5000 6000");
  EXPECT_EQ(render_error("{{ ([0] * 16000000)|length }}").kind, jinja::ErrorKind::limit);
  // An empty string or list repeats to itself at once, however large the count.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render("{{ ('' * 10**18)|length }} {{ ([] * 10**18)|length }} {{ (() * w)|length }}", {{"w", int64_t{1} << 62}}, o),
            "0 0 0");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// A string's characters are a Value each: a string iterated (a for loop, |list, |first, unpacking)
// is held to the output size limit in the bytes its characters take, before they are built.
TEST(JinjaLimits, AStringIteratedIsBoundedInTheBytesOfItsCharacters) {
  const auto o = small_limits();
  for (const std::string text : {"{% for c in 'x' * 1000 %}{% endfor %}", "{{ ('x' * 1000)|list|length }}",
                                 "{% set a, b = 'x' * 1000 %}", "{{ ('x' * 1000)|join('-') }}",
                                 "{{ ('é' * 500)|list|length }}"})
    expect_size_limit(text, text);
  // |first and |last take the character without iterating: any length the limit lets exist.
  EXPECT_EQ(render("{{ ('é' + 'x' * 1000)|first }}{{ ('x' * 1000 + '€')|last }}{{ ''|first }}|", {}, o), "é€|");
  // A short string iterates by code points as before.
  EXPECT_EQ(render("{% for c in 'aé€' %}[{{ c }}]{% endfor %} {{ 'abc'|list }} {% set a, b = 'xy' %}{{ b }}{{ a }}", {}, o),
            "[a][é][€] ['a', 'b', 'c'] yx");
  // Under the default 16 MiB limit a 100,000-character string still iterates; a 16 MiB one does not.
  EXPECT_EQ(render("{{ ('x' * 100000)|list|length }}"), "100000");
  EXPECT_NE(render_error("{% for c in 'x' * 16000000 %}{% endfor %}").message.find("grew past the output size limit"), std::string::npos);
}

// Integer arguments near int64's ends: no overflow past the bounds, no read past the text.
TEST(JinjaLimits, HugeIntegerArgumentsDoNotOverflow) {
  EXPECT_EQ(render_error("{{ range(-(2**62), 2**62)|length }}").kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{{ range(0, 9223372036854775807, 2)|length }}").kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render("{{ range(-9223372036854775807, 9223372036854775807, 4611686018427387904)|list }}"),
            "[-9223372036854775807, -4611686018427387903, 1, 4611686018427387905]");
  EXPECT_EQ(render("{{ range(5, 0, -2)|list }}"), "[5, 3, 1]");
  EXPECT_EQ(render("{{ 'abcdefghijkl'|truncate(9223372036854775807) }}"), "abcdefghijkl");
  EXPECT_EQ(render_error("{{ 'abc'|truncate(10, leeway=-100) }}").message, "expected leeway >= 0, got -100");
  EXPECT_EQ(render("{{ 'foo bar baz qux'|truncate(9) }}|{{ 'foo bar baz qux'|truncate(11, false, '...', 0) }}"), "foo...|foo bar...");
}

TEST(JinjaLimits, ANamespaceThatContainsItselfCannotOverflowTheStack) {
  const RenderFailure f = render_error("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns }}");
  EXPECT_EQ(f.kind, jinja::ErrorKind::limit);
  EXPECT_EQ(render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}").kind, jinja::ErrorKind::type);
  // Reference cycles through namespaces (the only mutable objects) are broken when the render ends,
  // failed or not: scripts/sanitize.sh's LeakSanitizer fails this test otherwise (builtins.h).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns, namespace(x=ns)] %}ok"), "ok");
  EXPECT_EQ(render("{% set ns = namespace() %}{% for i in [1, 2] %}{% set ns.loop = loop %}{% endfor %}{{ ns.loop.index }}"), "2");
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
