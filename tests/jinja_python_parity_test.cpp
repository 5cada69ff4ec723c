// Behaviours a differential run against Python's jinja2 (tools/jinja_template_differential.py
// over real Hub chat templates, tools/jinja_differential.py on snippets; 2026-12-05) found
// different in seam, each written out with jinja2's output:
//  - dict literals with number / None keys (ByteDance-Seed-OSS's {0: 0, 512: 128, ...} read by
//    [16384] and |dictsort), looked up as Python does (d[512] and d[512.0] are one key);
//  - no trim_blocks newline removal after an opening {% raw %};
//  - whitespace control (`-`, lstrip_blocks) stripping every str.isspace() code point;
//  - groupby's items with .grouper / .list;
//  - str.find / rfind / count / startswith / endswith with start and end;
//  - str.ljust / rjust / center with a fill character;
//  - str.format's format specs ({:>5}, {:.2f}, {:05d}, {:,}, {:#x}, {:%}, ...) and !r / !s;
//  - printf-style %(key)s fields over a dict, and the |format filter's keyword arguments.
#include <gtest/gtest.h>

#include "jinja_test_util.h"

namespace seam::test {
namespace {

TEST(JinjaPythonParity, DictLiteralsWithNumberKeys) {
  EXPECT_EQ(render("{% set d = {0: 'a', 512: 'b'} %}{{ d[512] }}|{{ d }}|{{ d|tojson }}|{{ 512 in d }}|{{ 3 in d }}"
                   "|{{ d.get(0) }}|{{ d[512.0] }}|{{ d.keys()|list }}|{{ d[1] is defined }}"),
            "b|{0: 'a', 512: 'b'}|{\"0\": \"a\", \"512\": \"b\"}|True|False|a|b|[0, 512]|False");
  // ByteDance-Seed-OSS's budget table, walked with dictsort and read by a computed key.
  EXPECT_EQ(render("{% set t = {16384: 1024, 0: 0, 512: 128} %}{% for k, v in t|dictsort %}{{ k }}:{{ v }} {% endfor %}"
                   "{{ t[16384] }}{% for k in t %}/{{ k + 1 }}{% endfor %}"),
            "0:0 512:128 16384:1024 1024/16385/1/513");
  EXPECT_EQ(render("{% set d = {none: 'n', 1.5: 'f', 'x': 1} %}{{ d[none] }}{{ d[1.5] }}{{ d|tojson }}"),
            "nf{\"null\": \"n\", \"1.5\": \"f\", \"x\": 1}");
  EXPECT_EQ(render("{{ {'1': 'string key', 1: 'int key'}['1'] }}|{{ {'1': 'string key', 1: 'int key'}[1] }}"),
            "string key|int key");
  // json.dumps(sort_keys=True) orders number keys by value; a str key that only looks like the
  // stored form of a number key is still a str (no exception).
  EXPECT_EQ(render("{{ {10: 'a', 9: 'b'}|tojson(sort_keys=True) }}|{{ {9210000000000000000: 'a'}[9.21e18] }}"),
            "{\"9\": \"b\", \"10\": \"a\"}|a");
  EXPECT_EQ(render("{% for k in d %}[{{ k|length }}]{% endfor %}{{ d[1] is defined }}",
                   {{"d", {{"\u0001ixyz", 1}, {"\u0001i99999999999999999999", 2}}}}),
            "[5][22]False");
  EXPECT_NE(render_error("{{ {[1]: 2} }}").message.find("unhashable type: 'list'"), std::string::npos);
  EXPECT_NE(render_error("{{ [] in {'a': 1} }}").message.find("unhashable type: 'list'"), std::string::npos);
  EXPECT_EQ(render("{{ nothing in {'a': 1} }}"), "False");
}

TEST(JinjaPythonParity, RawKeepsTheNewlineAfterItsOpeningTag) {
  EXPECT_EQ(render("{% raw %}\nx{% endraw %}\ny"), "\nxy");
  EXPECT_EQ(render("{% raw -%}\n  x{% endraw %}"), "x");
}

TEST(JinjaPythonParity, WhitespaceControlStripsUnicodeSpaces) {
  EXPECT_EQ(render("x\u00a0{%- if true %}y{% endif %}"), "xy");                    // NBSP before `{%-`
  EXPECT_EQ(render("{%- if true -%}\x1c\u3000x{% endif %}"), "x");                 // \x1c, ideographic space
  EXPECT_EQ(render("a\n\u00a0 {% if true %}b{% endif %}"), "a\nb");                // lstrip_blocks
  EXPECT_EQ(render("a\n\x0b {% if true %}b{% endif %}"), "a\nb");
  EXPECT_EQ(render("x\u2028{%- if true %}y{% endif %}"), "xy");
  // Not spaces: a letter whose UTF-8 ends in 0x85 (U+0445), a non-breaking letter-like sign.
  EXPECT_EQ(render("\u0445{%- if true %}y{% endif %}"), "\u0445y");
  EXPECT_EQ(render("a\n\u0445 {% if true %}b{% endif %}"), "a\n\u0445 b");
}

TEST(JinjaPythonParity, GroupbyItemsHaveGrouperAndList) {
  EXPECT_EQ(render("{% for g in items|groupby('t') %}{{ g.grouper }}:{{ g.list|length }};{% endfor %}"
                   "{% for k, v in items|groupby('t') %}{{ k }}{{ v|length }}{% endfor %}",
                   {{"items", {{{"t", "a"}}, {{"t", "b"}}, {{"t", "a"}}}}}),
            "a:2;b:1;a2b1");
}

TEST(JinjaPythonParity, StringSearchesTakeStartAndEnd) {
  EXPECT_EQ(render("{{ 'abcb'.find('b', 2) }}|{{ 'abcb'.rfind('b', 0, 2) }}|{{ 'abcb'.count('b', 2) }}|"
                   "{{ 'abc'.startswith('b', 1) }}|{{ 'abc'.endswith('b', 0, 2) }}|{{ 'abc'.find('', 5) }}|"
                   "{{ 'abc'.find('', 3) }}|{{ 'h\u00e9llo'.find('l', -2) }}|{{ 'abcb'.index('b', 2) }}|"
                   "{{ 'abc'.startswith('', 4) }}|{{ 'abcb'.find('b', none, 1) }}"),
            "3|1|1|True|True|-1|3|3|3|False|-1");
  // start past end: nothing matches, not even an empty needle.
  EXPECT_EQ(render("{{ 'abc'.find('', 2, 1) }}|{{ 'abc'.count('', 2, 1) }}|{{ 'abc'.startswith('', 2, 1) }}"),
            "-1|0|False");
}

TEST(JinjaPythonParity, PaddingTakesAFillCharacter) {
  EXPECT_EQ(render("{{ 'abc'.ljust(5, '*') }}|{{ 'abc'.rjust(5, '*') }}|{{ 'abc'.center(7, '-') }}|"
                   "{{ '\u00e9'.center(4, '\u00fc') }}|{{ 'ab'.ljust(4) }}|"),
            "abc**|**abc|--abc--|\u00fc\u00e9\u00fc\u00fc|ab  |");
  EXPECT_NE(render_error("{{ 'a'.center(3, '--') }}").message.find("exactly one character"), std::string::npos);
}

TEST(JinjaPythonParity, StrFormatTakesFormatSpecs) {
  // Expected: Python 3's str.format of the same fields and values.
  EXPECT_EQ(render("{{ '{:>5}|{:.2f}|{:05d}|{:*^9}|{:+d}|{:,}|{:#x}|{:#b}|{:.3g}|{:.1%}|{!r}|{:,.2f}|{:=+8d}|{:.2}|"
                   "{}|{:.3s}|{:c}|{:g}|{:.0f}|{:\u00fc>5}'.format('a', 3.14159, 42, 'mid', 5, 1234567, 255, 5, "
                   "0.000123456, 0.1234, 'q', 1234567.891, -42, 1.0, 1.5, 'abcdef', 65, 1e20, 2.5, '\u00e9') }}"),
            "    a|3.14|00042|***mid***|+5|1,234,567|0xff|0b101|0.000123|12.3%|'q'|1,234,567.89|-     42|1.0|1.5|abc|A|"
            "1e+20|2|\u00fc\u00fc\u00fc\u00fc\u00e9");
  // Zero padding groups its zeros; no type with a precision switches to exponents from p - 1; the
  // 0 flag pads strings on the right; precision past a fixed buffer (a review's finds).
  EXPECT_EQ(render("{{ '{:010,}|{:012,.2f}|{:.2}|{:.3}|{:.0}|{:.3}|{:.5}|{:05}|{:>05}|'.format(1, -1234.5678, 12.0, "
                   "123.4, 1.5, 1.0, 0.0001234, 'ab', 'ab') }}{{ '{:.600f}'.format(1.0)|length }}"),
            "00,000,001|-0,001,234.57|1.2e+01|1.23e+02|2e+00|1.0|0.0001234|ab000|000ab|602");
  EXPECT_NE(render_error("{{ '{:d}'.format(1.5) }}").message.find("Unknown format code 'd' for object of type 'float'"),
            std::string::npos);
  EXPECT_NE(render_error("{{ '{:>5}'.format(none) }}").message.find("unsupported format string passed to NoneType"),
            std::string::npos);
}

TEST(JinjaPythonParity, PrintfFormatTakesMappingKeys) {
  // Expected: Python 3's str % dict of the same fields (jinja2 passes % through), and jinja2's
  // |format, which is value % (kwargs or args).
  EXPECT_EQ(render("{{ '%(a)s-%(b)05.1f|%(a)-4d|%(a)r|%%|%(c(d))s|%()s' % {'a': 7, 'b': 2.25, 'c(d)': 'n', '': 'e'} }}"),
            "7-002.2|7   |7|%|n|e");
  // A dict is also the one value of a plain %s, and its unused items are no error.
  EXPECT_EQ(render("{{ '%s' % {'a': 1} }}|{{ 'x' % {'a': 1} }}|{{ '%s %(a)s' % {'a': 1} }}|{{ '%(a)s' % {'a': 1, 'b': 2} }}"),
            "{'a': 1}|x|{'a': 1} 1|1");
  EXPECT_EQ(render("{{ '%(name)s is %(n)d'|format(name='x', n=3) }}|{{ '%s-%s'|format('a', 1) }}"), "x is 3|a-1");
  // Python's errors: a missing key, no mapping, a plain field after a keyed one, an open key.
  EXPECT_EQ(render_error("{{ '%(a)s' % {'b': 1} }}").message, "KeyError: 'a'");
  EXPECT_EQ(render_error("{{ '%(a)s' % (1,) }}").message, "format requires a mapping");
  EXPECT_EQ(render_error("{{ '%(a)s' % 1 }}").message, "format requires a mapping");
  EXPECT_EQ(render_error("{{ '%(a)s %s' % {'a': 1} }}").message, "not enough arguments for format string");
  EXPECT_EQ(render_error("{{ '%(a' % {'a': 1} }}").message, "incomplete format key");
  EXPECT_EQ(render_error("{{ '%(a)s'|format(1, a=1) }}").message, "can't handle positional and keyword arguments at the same time");
  // Positional formatting is unchanged.
  EXPECT_EQ(render_error("{{ 'x' % (1,) }}").message, "not all arguments converted during string formatting");
}

}  // namespace
}  // namespace seam::test
