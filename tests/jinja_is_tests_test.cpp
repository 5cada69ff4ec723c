// Every test of the engine (`x is name`), with Python's type facts: a bool is
// a number but not an integer, a dict is iterable and a sequence, a string is
// iterable but not a mapping.
#include "jinja_test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

// "TF" string of `v is <test>` for each test in `tests`.
std::string facts(const ordered_json& v, const std::vector<std::string>& tests) {
  std::string t;
  for (const auto& name : tests) t += "{{ 'T' if v is " + name + " else 'F' }}";
  return render(t, {{"v", v}});
}

TEST(JinjaTests, TypeTests) {
  const std::vector<std::string> tests = {"defined", "undefined", "none",     "boolean", "true",   "false", "integer",
                                          "float",   "number",    "string",   "mapping", "iterable", "sequence", "callable"};
  EXPECT_EQ(facts("s", tests), "TFFFFFFFFTFTTF");
  EXPECT_EQ(facts(true, tests), "TFFTTFFFTFFFFF");
  EXPECT_EQ(facts(3, tests), "TFFFFFTFTFFFFF");
  EXPECT_EQ(facts(2.5, tests), "TFFFFFFTTFFFFF");
  EXPECT_EQ(facts(nullptr, tests), "TFTFFFFFFFFFFF");
  EXPECT_EQ(facts({1, 2}, tests), "TFFFFFFFFFFTTF");
  EXPECT_EQ(facts({{"a", 1}}, tests), "TFFFFFFFFFTTTF");
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ raise_exception is callable }} {{ x is iterable }} {{ x is sequence }}"),
            "False True True True True");
}

TEST(JinjaTests, NumberTests) {
  EXPECT_EQ(render("{{ 3 is odd }} {{ 3 is even }} {{ 4 is divisibleby 2 }} {{ 4 is divisibleby(3) }}"), "True False True False");
  EXPECT_EQ(render("{{ 2.5 is odd }} {{ 2.5 is even }} {{ 3.0 is odd }} {{ -3 is odd }}"), "False False True True");
  EXPECT_EQ(render_error("{{ 'a' is odd }}").kind, jinja::ErrorKind::type);
}

TEST(JinjaTests, ComparisonTests) {
  EXPECT_EQ(render("{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is le 2 }} {{ 3 is gt 2 }} {{ 2 is ge 3 }} "
                   "{{ 2 is greaterthan 1 }} {{ 1 is lessthan 1 }}"),
            "True False True True True True False True False");
  EXPECT_EQ(render("{{ 1 is in [1] }} {{ 'a' is in 'bcd' }} {{ none is sameas none }} {{ true is sameas 1 }} {{ x is sameas x }}",
                   {{"x", {1}}}),
            "True False True False True");
}

TEST(JinjaTests, StringAndNameTests) {
  EXPECT_EQ(render("{{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }} {{ '1' is upper }}"), "True False True False");
  EXPECT_EQ(render("{{ 'trim' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ 'x' is escaped }}"), "True False True False");
  EXPECT_EQ(render("{{ x is not defined }} {{ not x is defined }} {{ 2 is not odd }}"), "True True True");
  EXPECT_EQ(render_error("{{ 1 is no_such_test }}").message, "no test named 'no_such_test'");
}

}  // namespace
}  // namespace seam::test
