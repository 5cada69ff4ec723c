// Every filter of the engine, with the output Python's jinja2 gives (and
// transformers' tojson: json.dumps with ensure_ascii=False).
#include "jinja_test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

TEST(JinjaFilters, TextFilters) {
  EXPECT_EQ(render("[{{ '  t \\n'|trim }}] [{{ 'xxtxx'|trim('x') }}] {{ 'HeLLo'|lower }} {{ 'x'|upper }} {{ 'hELLO wORLD'|capitalize }}"),
            "[t] [t] hello X Hello world");
  EXPECT_EQ(render("{{ 'été'|upper }} {{ 'ÉTÉ'|lower }} {{ 'straße'|upper }} {{ 'ÀÖ Ωμέγα Привет'|lower }}"),
            "ÉTÉ été STRASSE àö ωμέγα привет");
  // jinja2's title splits words at whitespace and - ( { [ <, unlike str.title().
  EXPECT_EQ(render("{{ 'hello world'|title }} {{ \"they're a-b\"|title }}"), "Hello World They're A-B");
  EXPECT_EQ(render("{{ 'abcb'|replace('b', 'X') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|reverse }} {{ 'a b c'|wordcount }}"),
            "aXcX bba cba 3");
  EXPECT_EQ(render("{{ 1|string }}{{ none|string }} {{ x|string }}| [{{ 'abc'|center(9) }}] {{ '<a&b>'|escape }} {{ 'x'|safe }}"),
            "1None | [   abc   ] &lt;a&amp;b&gt; x");
  EXPECT_EQ(render("{{ '%s-%s'|format('a', 1) }} {{ 'a long sentence here'|truncate(9, leeway=0) }}"), "a-1 a...");
}

TEST(JinjaFilters, Indent) {
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent }}"), "a\n    b\n\n    c");
  EXPECT_EQ(render("{{ 'a\\nb'|indent(2, true) }}"), "  a\n  b");
  EXPECT_EQ(render("{{ 'a\\n\\nb'|indent(2, blank=true) }}"), "a\n  \n  b");
  EXPECT_EQ(render("{{ 'x\\ny'|indent('> ', first=true) }}"), "> x\n> y");
}

TEST(JinjaFilters, DefaultAndLength) {
  EXPECT_EQ(render("{{ x|default('d') }} {{ ''|default('d', true) }} [{{ ''|default('d') }}] {{ none|default('d') }} {{ x|d('e') }}"),
            "d d [] None e");
  EXPECT_EQ(render("{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a': 1}|length }} {{ x|length }} {{ [1,2,3]|count }}"), "5 2 1 0 3");
  EXPECT_EQ(render_error("{{ 5|length }}").message, "object of type 'int' has no len()");
}

TEST(JinjaFilters, Numbers) {
  EXPECT_EQ(render("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 4.7|int }} {{ -4.7|int }} {{ true|int }} {{ '0x1A'|int(0, 16) }}"),
            "42 4 0 7 4 -4 1 26");
  EXPECT_EQ(render("{{ '3.5'|float }} {{ 3|float }} {{ 'x'|float }} {{ -3|abs }} {{ -2.5|abs }}"), "3.5 3.0 0.0 3 2.5");
  // round: Python's round (half to even on the double's exact value), or ceil/floor.
  EXPECT_EQ(render("{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }} {{ 2.19|round(1, 'floor') }}"),
            "2.0 4.0 2.67 7 3.0 2.1");
}

TEST(JinjaFilters, Tojson) {
  const ordered_json ctx = {{"d", ordered_json::parse(R"({"b": [1, 2.5, null, true], "a": "é\"\n<&>", "c": {}})")}};
  EXPECT_EQ(render("{{ d|tojson }}", ctx), R"({"b": [1, 2.5, null, true], "a": "é\"\n<&>", "c": {}})");
  EXPECT_EQ(render("{{ d|tojson(indent=2) }}", ctx),
            "{\n  \"b\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"a\": \"é\\\"\\n<&>\",\n  \"c\": {}\n}");
  EXPECT_EQ(render("{{ d|tojson(sort_keys=true) }}", ctx), R"({"a": "é\"\n<&>", "b": [1, 2.5, null, true], "c": {}})");
  EXPECT_EQ(render("{{ d|tojson(separators=(',', ':')) }}", ctx), R"({"b":[1,2.5,null,true],"a":"é\"\n<&>","c":{}})");
  EXPECT_EQ(render("{{ d.a|tojson(ensure_ascii=true) }} {{ '😊'|tojson(ensure_ascii=true) }}", ctx), R"("\u00e9\"\n<&>" "\ud83d\ude0a")");
  EXPECT_EQ(render("{{ []|tojson(indent=2) }} {{ 1.0|tojson }} {{ 1e20|tojson }} {{ 'x\\u0001'|tojson }}"), "[] 1.0 1e+20 \"x\\u0001\"");
  EXPECT_EQ(render_error("{{ x|tojson }}").message, "Object of type Undefined is not JSON serializable");
}

TEST(JinjaFilters, FirstLastJoinListReverse) {
  EXPECT_EQ(render("{{ [1,2,3]|first }} {{ [1,2,3]|last }} [{{ []|first }}] {{ 'abc'|first }}"), "1 3 [] a");
  EXPECT_EQ(render("{{ [1,'a',none]|join(', ') }} {{ users|join('/', attribute='n') }} {{ 'abc'|join('.') }}",
                   {{"users", ordered_json::parse(R"([{"n": "a"}, {"n": "b"}])")}}),
            "1, a, None a/b a.b.c");
  EXPECT_EQ(render("{{ 'ab'|list }} {{ {'k': 1}|list }} {{ [3,1]|reverse|list }} {{ x|list }}"), "['a', 'b'] ['k'] [1, 3] []");
}

TEST(JinjaFilters, MapSelectReject) {
  const ordered_json users = ordered_json::parse(R"([{"name": "a", "admin": true, "role": "x"}, {"name": "b", "admin": false, "role": "y"}, {"name": "c"}])");
  EXPECT_EQ(render("{{ users|map(attribute='name')|join(',') }} {{ users|map(attribute='role', default='-')|list }}", {{"users", users}}),
            "a,b,c ['x', 'y', '-']");
  EXPECT_EQ(render("{{ [1,2,3]|map('string')|join('+') }} {{ ['a']|map('upper')|first }} {{ [1.26]|map('round', 1)|list }}"),
            "1+2+3 A [1.3]");
  EXPECT_EQ(render("{{ users|selectattr('admin')|map(attribute='name')|list }} {{ users|rejectattr('admin')|map(attribute='name')|list }}",
                   {{"users", users}}),
            "['a'] ['b', 'c']");
  EXPECT_EQ(render("{{ users|selectattr('role', 'equalto', 'y')|map(attribute='name')|list }} "
                   "{{ users|selectattr('role', 'defined')|list|length }} {{ users|selectattr('role', 'in', ['x', 'z'])|list|length }}",
                   {{"users", users}}),
            "['b'] 2 1");
  EXPECT_EQ(render("{{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('even')|list }} {{ [0,1,'',2]|select|list }} "
                   "{{ [1,5,3]|select('gt', 2)|list }}"),
            "[1, 3] [1, 3] [1, 2] [5, 3]");
}

TEST(JinjaFilters, ItemsDictsortSortUnique) {
  const ordered_json ctx = {{"d", ordered_json::parse(R"({"b": 1, "a": 3, "C": 2})")}};
  EXPECT_EQ(render("{{ d|items|list }} {{ x|items|list }}", ctx), "[('b', 1), ('a', 3), ('C', 2)] []");
  EXPECT_EQ(render("{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }}", ctx),
            "[('a', 3), ('b', 1), ('C', 2)] [('C', 2), ('a', 3), ('b', 1)] [('C', 2), ('b', 1), ('a', 3)] [('b', 1), ('C', 2), ('a', 3)]");
  EXPECT_EQ(render("{{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ ['b','A','c']|sort(case_sensitive=true) }} {{ [3,1,2]|sort(reverse=true) }}"),
            "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1]");
  EXPECT_EQ(render("{{ [{'a':2},{'a':1}]|sort(attribute='a') }}"), "[{'a': 1}, {'a': 2}]");
  EXPECT_EQ(render("{{ [1,2,2,'a','A']|unique|list }} {{ ['a','A']|unique(true)|list }}"), "[1, 2, 'a'] ['a', 'A']");
}

TEST(JinjaFilters, Aggregates) {
  EXPECT_EQ(render("{{ [1,2,3]|sum }} {{ [{'v': 2}, {'v': 3}]|sum(attribute='v') }} {{ [1.5]|sum(start=1) }} {{ [1,5,3]|max }} {{ [4,2]|min }} "
                   "{{ ['b','A']|min }}"),
            "6 5 2.5 5 2 A");
  EXPECT_EQ(render("{{ [1,2,3]|batch(2)|list }} {{ [1,2,3]|batch(2, 0)|list }}"), "[[1, 2], [3]] [[1, 2], [3, 0]]");
  EXPECT_EQ(render("{% for k, g in xs|groupby('t') %}{{ k }}:{{ g|map(attribute='v')|join }};{% endfor %}",
                   {{"xs", ordered_json::parse(R"([{"t": "b", "v": 1}, {"t": "a", "v": 2}, {"t": "b", "v": 3}])")}}),
            "a:2;b:13;");
  // attr() is getattr: a dict's key is not an attribute, a namespace's is.
  EXPECT_EQ(render("[{{ d|attr('x') }}] {% set ns = namespace(x=6) %}{{ ns|attr('x') }} {{ {'a': 1}|pprint }}", {{"d", {{"x", 5}}}}),
            "[] 6 {'a': 1}");
}

TEST(JinjaFilters, UnknownFilterIsAnError) {
  EXPECT_EQ(render_error("{{ 1|no_such_filter }}").message, "no filter named 'no_such_filter'");
}

}  // namespace
}  // namespace seam::test
