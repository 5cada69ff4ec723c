// JSON Schema constraints end to end on the CPU: for a suite of schemas that
// covers every supported keyword, random token sequences drawn from the masks
// (two real tokenizers) must parse as JSON and validate against the schema;
// what the engine cannot enforce must be an error naming the keyword.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>

#include "core/error.h"
#include "grammar/json_schema_to_grammar.h"
#include "grammar_schema_validator.h"

namespace seam::grammar::test {
namespace {

struct SchemaCase {
  const char* name;
  const char* schema;  // "" = the json_object mode
  bool any_whitespace = false;
};

const SchemaCase kSuite[] = {
    {"flat_object", R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
      "age":{"type":"integer","minimum":0,"maximum":120},"ok":{"type":"boolean"},"none":{"type":"null"}},
      "required":["name","age"]})"},
    {"nested", R"({"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string","maxLength":6},"minItems":1,"maxItems":3}},
      "required":["id","tags"]},"scores":{"type":"array","items":{"type":"number"},"maxItems":4}},
      "required":["user","scores"],"additionalProperties":false})"},
    {"enum_const", R"({"type":"object","properties":{"color":{"enum":["red","green","dark blue",null,7,"quo\"te"]},
      "version":{"const":"v1"},"pair":{"const":[1,{"a":true}]}},"required":["color","version","pair"]})"},
    {"any_one_of", R"({"type":"object","properties":{"v":{"anyOf":[{"type":"string","maxLength":5},{"type":"integer"}]},
      "shape":{"oneOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","minimum":0}},
      "required":["kind","r"]},{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"integer"}},
      "required":["kind","side"]}]}},"required":["v","shape"]})"},
    {"recursive_ref",
     R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer","minimum":-5,"maximum":5},
      "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value","children"]}},
      "$ref":"#/$defs/node"})"},
    {"root_ref",
     R"({"type":"object","properties":{"name":{"type":"string","maxLength":4},"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
      "required":["name","next"]})"},
    {"definitions_ref", R"({"definitions":{"id":{"type":"string","format":"uuid"}},"type":"array",
      "items":{"$ref":"#/definitions/id"},"minItems":2,"maxItems":2})"},
    {"string_lengths", R"({"type":"object","properties":{"a":{"type":"string","minLength":3,"maxLength":5},
      "b":{"type":"string","minLength":2},"c":{"type":"string","maxLength":0}},"required":["a","b","c"]})"},
    {"patterns", R"({"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{3}-\\d{2,4}$"},
      "has_digit":{"type":"string","pattern":"[0-9]"},"quote":{"type":"string","pattern":"^\"[a-c]+\\\\$"}},
      "required":["code","has_digit","quote"]})"},
    {"formats",
     R"({"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"time"},
      "dt":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uuid"},
      "ip":{"type":"string","format":"ipv4"}},"required":["d","t","dt","e","u","ip"]})"},
    {"integer_ranges", R"({"type":"object","properties":{"a":{"type":"integer","minimum":-37,"maximum":-3},
      "b":{"type":"integer","exclusiveMinimum":99,"exclusiveMaximum":1001},"c":{"type":"integer","minimum":250},
      "d":{"type":"integer","maximum":-12},"e":{"type":"integer","minimum":-7,"maximum":1234},
      "f":{"type":"number","minimum":0}},"required":["a","b","c","d","e","f"]})"},
    {"type_arrays", R"({"type":"object","properties":{"a":{"type":["string","null"],"maxLength":3},
      "b":{"type":["integer","boolean"],"minimum":1,"maximum":3}},"required":["a","b"]})"},
    {"additional_schema", R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],
      "additionalProperties":{"type":"integer","minimum":0,"maximum":9}})"},
    {"dict_of_arrays",
     R"({"type":"object","additionalProperties":{"type":"array","items":{"type":"boolean"},"maxItems":2},
      "maxItems":3})"},
    {"open_object",
     R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"}},"additionalProperties":true})"},
    {"tuple_allof",
     R"({"type":"array","prefixItems":[{"type":"integer"},{"allOf":[{"type":"string","maxLength":3}]},{"type":"null"}],
      "items":false})"},
    {"all_of_objects",
     R"({"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer","minimum":1,"maximum":9}},"required":["id"]}},
      "allOf":[{"$ref":"#/$defs/base"},{"type":"object","properties":{"name":{"type":"string","maxLength":3},
      "id":{"type":"integer","maximum":5}},"required":["name"]}]})"},
    {"all_of_bounds", R"({"type":"object","properties":{
      "s":{"allOf":[{"type":["string","null"],"minLength":2},{"type":"string","maxLength":4}]},
      "n":{"allOf":[{"type":"number"},{"type":"integer","minimum":-3},{"maximum":3}]},
      "e":{"allOf":[{"enum":["a","b","c"]},{"enum":["c","b","z"]}]},
      "l":{"allOf":[{"type":"array","items":{"type":"integer","minimum":0},"maxItems":3},{"items":{"maximum":2}}]}},
      "required":["s","n","e","l"]})"},
    {"all_of_distributed", R"({"allOf":[{"anyOf":[
      {"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer","minimum":0,"maximum":3}},"required":["kind","x"]},
      {"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"boolean"}},"required":["kind","y"]}]},
      {"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":99}},"required":["id"]}]})"},
    {"all_of_additional", R"({"type":"object","properties":{
      "closed":{"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":5},
        "b":{"type":"string","maxLength":2}},"additionalProperties":false},
        {"type":"object","properties":{"a":{"type":"integer"},"c":{"type":"boolean"}},"required":["a"]}]},
      "typed":{"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":5}},
        "additionalProperties":{"type":"integer","minimum":0,"maximum":9}},
        {"type":"object","properties":{"b":{"type":"integer","minimum":3}},"required":["b"]}]}},
      "required":["closed","typed"]})"},
    {"number_ranges", R"({"type":"object","properties":{"p":{"type":"number","minimum":0,"maximum":1},
      "price":{"type":"number","exclusiveMinimum":0,"maximum":99.99},"t":{"type":"number","minimum":-273.15,"maximum":-200.5},
      "x":{"type":"number","minimum":-1.25,"exclusiveMaximum":0.75},"y":{"type":"number","exclusiveMaximum":-0.001},
      "z":{"type":"number","minimum":12.5}},"required":["p","price","t","x","y","z"]})"},
    {"tuples", R"({"type":"object","properties":{
      "pair":{"type":"array","prefixItems":[{"type":"string","maxLength":3},{"type":"integer","minimum":0,"maximum":9}],
        "minItems":2,"maxItems":2},
      "head":{"type":"array","prefixItems":[{"const":"cmd"}],"items":{"type":"integer","minimum":0,"maximum":99},"maxItems":4},
      "short":{"type":"array","prefixItems":[{"type":"boolean"},{"type":"null"},{"type":"boolean"}],"items":false,"minItems":1}},
      "required":["pair","head","short"]})"},
    {"more_formats", R"({"type":"object","properties":{"ip6":{"type":"string","format":"ipv6"},
      "host":{"type":"string","format":"hostname"},"d":{"type":"string","format":"duration"},
      "u":{"type":"string","format":"uri"},"r":{"type":"string","format":"uri-reference"}},
      "required":["ip6","host","d","u","r"]})"},
    {"any_value", R"({})"},
    {"json_object_mode", ""},
    {"any_whitespace", R"({"type":"object","properties":{"x":{"type":"array","items":{"type":"integer"},"maxItems":3},
      "y":{"type":"string","maxLength":3}},"required":["x","y"]})",
     true},
    {"unicode",
     R"({"type":"object","properties":{"名前":{"enum":["东京","Zürich","tab\there"]},"é":{"type":"string","pattern":"^[α-ω]{2}$"}},
      "required":["名前","é"]})"},
};

std::string sample_dir() {
  const char* d = std::getenv("SEAM_GRAMMAR_SAMPLES_DIR");
  return d ? d : "";
}

class JsonSchemaSuite : public ::testing::TestWithParam<const char*> {};

TEST_P(JsonSchemaSuite, SamplesParseAndValidate) {
  const TestVocab& tv = test_vocab(GetParam());
  GrammarCompiler compiler(tv.vocab);
  std::ofstream samples;
  if (!sample_dir().empty()) samples.open(sample_dir() + "/json_schema_" + tv.name + ".jsonl");
  std::mt19937 rng(1234);
  for (const SchemaCase& c : kSuite) {
    SCOPED_TRACE(c.name);
    Constraint k;
    k.kind = *c.schema ? ConstraintKind::kJsonSchema : ConstraintKind::kJsonObject;
    k.text = c.schema;
    k.json_options.any_whitespace = c.any_whitespace;
    const auto g = compiler.compile(k);
    const ojson schema = *c.schema ? ojson::parse(c.schema) : ojson{{"type", "object"}};
    int n_terminated = 0, n_validated = 0, n_beyond_double = 0;
    constexpr int kSamples = 12;
    for (int i = 0; i < kSamples; ++i) {
      const Sample s = sample(g, rng, 600, 40, i < 2 ? 30 : 0);
      EXPECT_EQ(s.n_mask_mismatches, 0) << "the mask differs from the brute force after '" << s.text << "'";
      if (!s.terminated) continue;
      ++n_terminated;
      if (samples.is_open()) samples << ojson{{"case", c.name}, {"schema", schema}, {"output", s.text}}.dump() << "\n";
      ojson v;
      try {
        v = ojson::parse(s.text);
      } catch (const nlohmann::json::out_of_range&) {
        ++n_beyond_double;  // a number beyond a double (e.g. 1e999): valid JSON nlohmann does not hold
        if (std::getenv("SEAM_GRAMMAR_DEBUG")) fprintf(stderr, "beyond double: %s\n", s.text.c_str());
        continue;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not JSON: " << s.text << " (" << e.what() << ")";
        continue;
      }
      const std::string why = validate(v, schema, schema);
      EXPECT_EQ(why, "") << "output " << s.text;
      if (why.empty()) ++n_validated;
    }
    // Most samples end (the sampler steers to closing tokens); all that end validate.
    EXPECT_GE(n_terminated, kSamples / 2);
    EXPECT_EQ(n_validated + n_beyond_double, n_terminated);
    EXPECT_GE(n_validated, kSamples / 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, JsonSchemaSuite, ::testing::Values("stories260K", "llama3-style"));

// Exact strings: what the grammar accepts byte by byte, without a tokenizer.
bool accepts(const std::string& schema, const std::string& text, JsonSchemaOptions o = {}) {
  const auto vocab = test_vocab("stories260K").vocab;
  auto g = std::make_shared<const CompiledGrammar>(json_schema_to_grammar(std::string_view(schema), o), vocab,
                                                   CompileOptions{false});
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(JsonSchema, WhitespaceCompactWithSingleSpaces) {
  const std::string s =
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})";
  EXPECT_TRUE(accepts(s, R"({"a":[1,2]})"));
  EXPECT_TRUE(accepts(s, R"({"a": [1, 2]})"));
  EXPECT_FALSE(accepts(s, R"({"a":  [1,2]})"));
  EXPECT_FALSE(accepts(s, R"({ "a":[1,2]})"));
  EXPECT_FALSE(accepts(s, "{\"a\":[1,\n2]}"));
  JsonSchemaOptions any;
  any.any_whitespace = true;
  EXPECT_TRUE(accepts(s, "{ \"a\" :\n [ 1 ,\t2 ] }", any));
}

TEST(JsonSchema, PropertiesInOrderRequiredEnforced) {
  const std::string s = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
    "c":{"type":"integer"}},"required":["b"]})";
  EXPECT_TRUE(accepts(s, R"({"b":1})"));
  EXPECT_TRUE(accepts(s, R"({"a":0,"b":1,"c":2})"));
  EXPECT_TRUE(accepts(s, R"({"b":1,"c":2})"));
  EXPECT_FALSE(accepts(s, R"({"a":0})"));
  EXPECT_FALSE(accepts(s, R"({"a":0,"c":2})"));
  EXPECT_FALSE(accepts(s, R"({"b":1,"d":2})"));  // strict: no unlisted properties
  EXPECT_FALSE(accepts(s, R"({})"));
}

TEST(JsonSchema, AdditionalPropertiesNeverRepeatAListedName) {
  const std::string s =
      R"({"type":"object","properties":{"ab":{"type":"integer"}},"additionalProperties":{"type":"string"}})";
  EXPECT_TRUE(accepts(s, R"({"ab":1,"a":"x"})"));
  EXPECT_TRUE(accepts(s, R"({"abc":"x"})"));
  EXPECT_TRUE(accepts(s, R"({"":"x","b":"y"})"));
  EXPECT_FALSE(accepts(s, R"({"ab":"x"})"));  // ab is listed: its own schema applies
  EXPECT_FALSE(accepts(s, R"({"ab":1,"ab":"x"})"));
}

TEST(JsonSchema, IntegerRangesExact) {
  const std::string s = R"({"type":"integer","minimum":-12,"maximum":107})";
  for (int x = -200; x <= 300; ++x) EXPECT_EQ(accepts(s, std::to_string(x)), x >= -12 && x <= 107) << x;
  EXPECT_FALSE(accepts(s, "007"));
  EXPECT_FALSE(accepts(s, "-0"));
  const std::string lower = R"({"type":"integer","exclusiveMinimum":19})";
  for (int x = -30; x <= 300; ++x) EXPECT_EQ(accepts(lower, std::to_string(x)), x > 19) << x;
  EXPECT_TRUE(accepts(lower, "123456789012"));
}

TEST(JsonSchema, FormatsRejectImpossibleDates) {
  const std::string s = R"({"type":"string","format":"date"})";
  EXPECT_TRUE(accepts(s, "\"2024-02-29\""));
  EXPECT_TRUE(accepts(s, "\"2000-02-29\""));
  EXPECT_FALSE(accepts(s, "\"1900-02-29\""));
  EXPECT_FALSE(accepts(s, "\"2023-02-29\""));
  EXPECT_FALSE(accepts(s, "\"2023-04-31\""));
  EXPECT_TRUE(accepts(s, "\"2023-12-31\""));
}

// Each format's usual spellings are accepted and its near misses refused; whatever is accepted
// passes the test validator's own check of the format (written from the RFCs, not the regexes).
TEST(JsonSchema, FormatsIpv6HostnameDurationUri) {
  struct Case {
    const char* format;
    std::vector<std::string> good, bad;
  };
  const std::vector<Case> cases = {
      {"ipv6",
       {"::", "::1", "2001:db8::8a2e:370:7334", "2001:0db8:0000:0000:0000:ff00:0042:8329", "fe80::", "1:2:3:4:5:6:7::",
        "::ffff:192.0.2.128", "1::8", "1:2:3:4:5:6:1.2.3.4", "ABCD:ef01::"},
       {"", ":", ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::", "::1.2.3.256", "1:2:3:4:5:6:7", "::01.2.3.4",
        "fe80::1%eth0"}},
      {"hostname",
       {"localhost", "example.com", "a.b.c.d.e.f", "xn--bcher-kva.example", "my-service-name-in-the-cluster-01",
        "host1.sub-domain.example.org"},
       {"", "-a.com", "a-.com", "a..b", ".a", "a b", "ex_ample.com", std::string(64, 'a'), "a.com.", "1.2.3.4", "999.1",
        "42"}},
      {"duration",
       {"P1D", "P1Y", "P1Y2M", "P1Y2M3D", "P2M10D", "PT1H", "PT1H30M", "PT1M30S", "PT45S", "P1DT12H", "P3W", "P10Y0M0DT0H0M0S"},
       {"", "P", "PT", "1D", "P1H", "P1Y2D", "PT1H2S", "P1W2D", "P1DT", "PT1.5S", "P-1D", "p1d"}},
      {"uri",
       {"https://example.com", "http://user:pw@host:8080/p/a/t/h?q=1&r=x#frag", "mailto:someone@example.com",
        "urn:isbn:0451450523", "file:///etc/hosts", "ftp://ftp.example.org/a%20b", "https://example.com//x",
        "tag:example.com,2005:x"},
       {"", "example.com", "/relative/path", "http://exa mple.com", "https://example.com/%zz", "1http://x", ":x",
        "http://host:port/", "http://a/#b#c", "https://é.com"}},
      {"uri-reference",
       {"https://example.com/x", "/relative/path", "../up?q=1", "#frag", "", "a/b", "//host/path", "?q"},
       {"a b", ":x", "%g1", "http://exa mple.com", "#a#b"}},
  };
  for (const Case& c : cases) {
    const std::string schema = std::string(R"({"type":"string","format":")") + c.format + "\"}";
    for (const std::string& g : c.good) {
      EXPECT_TRUE(accepts(schema, nlohmann::json(g).dump())) << c.format << ": " << g;
      EXPECT_TRUE(check_format(c.format, g)) << "the validator refuses " << c.format << " " << g;
    }
    for (const std::string& b : c.bad) {
      EXPECT_FALSE(accepts(schema, nlohmann::json(b).dump())) << c.format << ": " << b;
      EXPECT_FALSE(check_format(c.format, b)) << "the validator takes " << c.format << " " << b;
    }
  }
}

TEST(JsonSchema, StringLengthCountsEscapesAsOneCharacter) {
  const std::string s = R"({"type":"string","minLength":2,"maxLength":2})";
  EXPECT_TRUE(accepts(s, R"("a\n")"));
  EXPECT_TRUE(accepts(s, R"("\u00e9x")"));
  EXPECT_TRUE(accepts(s, "\"\xC3\xA9x\""));
  EXPECT_FALSE(accepts(s, R"("\ud83d\ude00")"));  // surrogate escapes are never produced
  EXPECT_FALSE(accepts(s, R"("abc")"));
}

void expect_error(const std::string& schema, const std::string& needle);

// pattern / format beside minLength / maxLength: exactly the strings the pattern matches (a
// search unless anchored; std::regex_search as the oracle) whose length is within the bounds,
// every string over {a, b, c, x} of up to 5 characters checked for each pattern and bound pair
// (nullable stars, empty alternatives and nested counts among the patterns).
TEST(JsonSchema, PatternWithLengthIsTheIntersection) {
  const auto vocab = test_vocab("stories260K").vocab;
  const char* patterns[] = {"^[ab]+$",   "a|bb",          "^(ab|c)*$",       "^a{2,5}b?$", "x",
                            "^[a-c]*c$", "^(a|b)(c|x)?$", "^(a?b?)*c?$",     "^(|x)(a|)+$", "^(a{0,2}x){1,2}$"};
  const std::pair<int, int> bounds[] = {{0, 3}, {2, 4}, {1, -1}, {3, 3}, {0, 0}, {4, -1}};
  std::vector<std::string> texts{""};
  for (size_t i = 0; i < texts.size() && texts[i].size() < 5; ++i)
    for (char c : std::string("abcx")) texts.push_back(texts[i] + c);
  int n_checked = 0, n_accepted = 0;
  for (const char* p : patterns)
    for (auto [lo, hi] : bounds) {
      nlohmann::json schema = {{"type", "string"}, {"pattern", p}, {"minLength", lo}};
      if (hi >= 0) schema["maxLength"] = hi;
      SCOPED_TRACE(schema.dump());
      const std::regex oracle(p);
      bool any = false;
      for (const std::string& t : texts)
        any = any || (std::regex_search(t, oracle) && int(t.size()) >= lo && (hi < 0 || int(t.size()) <= hi));
      if (!any) {  // nothing satisfies both: an invalid schema, said so
        expect_error(schema.dump(), "invalid JSON Schema");
        continue;
      }
      auto g = std::make_shared<const CompiledGrammar>(json_schema_to_grammar(std::string_view(schema.dump())), vocab,
                                                       CompileOptions{false});
      for (const std::string& t : texts) {
        const bool want = std::regex_search(t, oracle) && int(t.size()) >= lo && (hi < 0 || int(t.size()) <= hi);
        GrammarMatcher m(g);
        const bool got = m.accept_bytes(nlohmann::json(t).dump()) && m.can_end();
        EXPECT_EQ(got, want) << "'" << t << "'";
        ++n_checked;
        n_accepted += got;
      }
    }
  EXPECT_GT(n_checked, 30000);
  EXPECT_GT(n_accepted, 1000);  // not vacuous
}

// Lengths count decoded characters (an escape is one), formats take bounds too, a bound the
// pattern's shape already keeps changes nothing, and a pattern too large to bound is refused.
TEST(JsonSchema, PatternWithLengthEdges) {
  const std::string esc = R"({"type":"string","pattern":"^[a-z\\n]+$","maxLength":2})";
  EXPECT_TRUE(accepts(esc, R"("a\n")"));
  EXPECT_TRUE(accepts(esc, R"("\n\n")"));
  EXPECT_FALSE(accepts(esc, R"("ab\n")"));
  const std::string date = R"({"type":"string","format":"date","minLength":1,"maxLength":64})";
  EXPECT_TRUE(accepts(date, R"("2024-02-29")"));
  EXPECT_FALSE(accepts(date, R"("2023-02-29")"));
  const std::string uuid_short = R"({"type":"string","format":"uuid","maxLength":35})";
  expect_error(uuid_short, "invalid JSON Schema");  // a uuid is 36 characters
  const std::string email = R"({"type":"string","format":"email","maxLength":8})";
  EXPECT_TRUE(accepts(email, R"("ab@c.de")"));
  EXPECT_FALSE(accepts(email, R"("abc@d.efg")"));
  const std::string url = R"({"type":"string","format":"uri","minLength":1,"maxLength":40})";
  EXPECT_TRUE(accepts(url, R"("https://example.com/a?b=c")"));
  EXPECT_TRUE(accepts(url, R"("https://example.com/aaaaaaaaaaaaaaaaaaaa")"));    // 40 characters
  EXPECT_FALSE(accepts(url, R"("https://example.com/aaaaaaaaaaaaaaaaaaaaa")"));  // 41
  EXPECT_FALSE(accepts(url, R"("not a uri")"));
  // Counted repeats past the position limit: refused, naming the keyword.
  expect_error(R"({"type":"string","pattern":"^(a{100}b?){100}$","maxLength":5000})", "'maxLength'");
}

// A chain of $defs each referring to the next nests the conversion past the text's own depth
// bound: 20,000 of them overflowed the compiling thread's stack. A chain of 200 still converts;
// 20,000 is a clear error (through $ref alone, and through allOf / anyOf / items on the way).
TEST(JsonSchema, ReferenceChainsAreBounded) {
  auto chain = [](int n, const std::string& wrap) {
    nlohmann::json defs;
    for (int i = 0; i < n; ++i) {
      const nlohmann::json r = {{"$ref", "#/$defs/a" + std::to_string(i + 1)}};
      defs["a" + std::to_string(i)] = wrap == "items"   ? nlohmann::json{{"type", "array"}, {"items", r}}
                                       : wrap.empty()  ? r
                                                        : nlohmann::json{{wrap, {r}}};
    }
    defs["a" + std::to_string(n)] = {{"type", "integer"}};
    return nlohmann::json{{"$defs", defs}, {"$ref", "#/$defs/a0"}}.dump();
  };
  EXPECT_TRUE(accepts(chain(200, ""), "7"));
  for (const std::string wrap : {"", "allOf", "anyOf", "items"}) {
    SCOPED_TRACE(wrap);
    expect_error(chain(20000, wrap), "nested deeper than 512 levels");
  }
}

void expect_error(const std::string& schema, const std::string& needle) {
  try {
    json_schema_to_grammar(std::string_view(schema));
    ADD_FAILURE() << "no error for " << schema;
  } catch (const ::seam::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(JsonSchema, UnsupportedKeywordsAreErrorsNamingThem) {
  expect_error(R"({"type":"object","patternProperties":{"^a":{}}})",
               "unsupported JSON Schema keyword 'patternProperties' at #");
  expect_error(R"({"type":"object","properties":{"a":{"not":{"type":"string"}}}})", "keyword 'not' at #/properties/a");
  expect_error(R"({"type":"array","uniqueItems":true})", "'uniqueItems'");
  expect_error(R"({"type":"integer","multipleOf":3})", "'multipleOf'");
  expect_error(R"({"type":"number","maximum":1e16})", "keyword 'maximum' at #: number bounds beyond 1e15");
  expect_error(R"({"type":"number","minimum":2.5,"exclusiveMaximum":2.5})", "no number lies within");
  // Satisfiable, but only by values under the 1e-30 that stands in for "> 0": unsupported, not invalid.
  expect_error(R"({"type":"number","exclusiveMinimum":0,"maximum":1e-31})", "unsupported JSON Schema keyword 'exclusiveMinimum'");
  expect_error(R"({"$defs":{"a":[{}]},"$ref":"#/$defs/a/99999999999999999999999"})", "points to nothing");
  expect_error(R"({"type":"string","format":"idn-email"})", "format 'idn-email'");
  expect_error(R"J({"type":"string","pattern":"(a)\\1"})J", "backreferences");
  expect_error(R"J({"type":"string","pattern":"a(?=b)"})J", "lookaround");
  expect_error(R"({"type":"object","minProperties":1})", "'minProperties'");
  expect_error(R"({"if":{"type":"string"},"then":{"minLength":1}})", "'if'");
  expect_error(R"({"$ref":"http://example.com/s.json"})", "'$ref'");
  expect_error(R"({"$ref":"#/$defs/missing"})", "points to nothing");
  expect_error(R"({"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false})",
               "'b' is required");
  expect_error(R"({"type":"integer","minimum":5,"maximum":4})", "no integer");
  expect_error(R"({"type":"strin"})", "unknown type 'strin'");
  expect_error(R"({"type":"object",)", "not valid JSON");
  expect_error(R"({"anyOf":[{"type":"string"}],"minLength":3})", "'minLength'");
  expect_error(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
               "keyword 'oneOf' at #: alternatives 0 and 1 may both match");
  expect_error(R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})", "'oneOf'");
  expect_error(
      R"({"oneOf":[{"type":"object","properties":{"k":{"const":"a"}}},{"type":"object","properties":{"k":{"const":"b"}}}]})",
      "'oneOf'");  // k not required: {} fits both
}

// Number bounds (decimal_range.h): plain decimals whose exact value is within the bounds. Against a
// double comparison (what a validator does), for every candidate: accepted implies within (never
// looser); within implies accepted for plain decimals of up to 4 places that are not within 1e-9 of
// an exclusive bound (the grammar moves those to the next double inward) and not "-0".
TEST(JsonSchema, NumberBoundsAcceptTheDecimalsWithinThem) {
  struct Case {
    std::optional<double> lo, hi;
    bool lo_ex, hi_ex;
  };
  const std::vector<Case> cases = {{0.0, 1.0, false, false},    {0.0, std::nullopt, true, false}, {-1.25, 0.75, false, true},
                                   {std::nullopt, -0.001, false, true}, {12.5, std::nullopt, false, false},
                                   {-273.15, -200.5, false, false}, {0.1, 0.3, true, true},     {2.5, 2.5, false, false},
                                   {-3.0, 3.0, true, true},       {0.05, 0.0625, false, false},   {-10.0, -9.99, false, false},
                                   {99.5, 100.25, false, false}};
  std::vector<std::string> candidates;
  for (int whole : {0, 1, 2, 3, 9, 10, 12, 13, 99, 100, 101, 200, 273, 274}) {
    for (const char* sign : {"", "-"}) {
      const std::string w = std::string(sign) + std::to_string(whole);
      candidates.push_back(w);
      for (const char* f : {".0", ".00", ".001", ".0009", ".049", ".05", ".0625", ".0626", ".06", ".1", ".1000", ".15",
                            ".2", ".25", ".2500", ".2501", ".3", ".3001", ".5", ".75", ".7499", ".9", ".99", ".999"})
        candidates.push_back(w + f);
    }
  }
  for (const char* odd : {"1e2", "-0", "00.5", "1.", ".5", "+1", "0.1e1"}) candidates.push_back(odd);
  for (const Case& c : cases) {
    nlohmann::json schema = {{"type", "number"}};
    if (c.lo) schema[c.lo_ex ? "exclusiveMinimum" : "minimum"] = *c.lo;
    if (c.hi) schema[c.hi_ex ? "exclusiveMaximum" : "maximum"] = *c.hi;
    SCOPED_TRACE(schema.dump());
    int n_accepted = 0;
    for (const std::string& text : candidates) {
      const bool accepted = accepts(schema.dump(), text);
      n_accepted += accepted;
      const bool plain = text.find_first_of("e.") == std::string::npos ? text != "-0" && text.rfind("00", 0) != 0 && text[0] != '+'
                                                                       : text.find('e') == std::string::npos && text.front() != '.' &&
                                                                             text.back() != '.' && text.rfind("00", 0) != 0;
      const double v = std::strtod(text.c_str(), nullptr);
      const bool within = (!c.lo || (c.lo_ex ? v > *c.lo : v >= *c.lo)) && (!c.hi || (c.hi_ex ? v < *c.hi : v <= *c.hi));
      if (accepted) EXPECT_TRUE(plain && within) << text;
      const bool near_exclusive = (c.lo_ex && std::fabs(v - *c.lo) < 1e-9) || (c.hi_ex && std::fabs(v - *c.hi) < 1e-9);
      if (plain && within && !near_exclusive && text != "-0" && text.rfind("-0.0", 0) != 0 && text.rfind("-0.00", 0) != 0)
        EXPECT_TRUE(accepted) << text;
    }
    EXPECT_GT(n_accepted, 0);
  }
  // Exclusive bounds: the bound itself, in any spelling, is refused; the nearest short decimals are taken.
  EXPECT_FALSE(accepts(R"({"type":"number","exclusiveMaximum":0.5})", "0.5"));
  EXPECT_FALSE(accepts(R"({"type":"number","exclusiveMaximum":0.5})", "0.50000"));
  EXPECT_TRUE(accepts(R"({"type":"number","exclusiveMaximum":0.5})", "0.4999999"));
  EXPECT_FALSE(accepts(R"({"type":"number","exclusiveMinimum":0})", "0.0"));
  EXPECT_TRUE(accepts(R"({"type":"number","exclusiveMinimum":0})", "0.000001"));
  // Draft 4's boolean exclusiveMinimum modifies minimum.
  EXPECT_FALSE(accepts(R"({"type":"number","minimum":1,"exclusiveMinimum":true})", "1"));
  EXPECT_TRUE(accepts(R"({"type":"number","minimum":1,"exclusiveMinimum":true})", "1.01"));
}

// prefixItems: the tuple's schemas in order, then "items" for the rest (any when absent, none when
// false) within minItems / maxItems; the whole tuple unless minItems asks for fewer.
TEST(JsonSchema, PrefixItemsWithTheItemsAfterThem) {
  const std::string open = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"},"maxItems":4})";
  EXPECT_TRUE(accepts(open, R"(["a",1])"));
  EXPECT_TRUE(accepts(open, R"(["a",1,true,false])"));
  EXPECT_FALSE(accepts(open, R"(["a",1,true,false,true])"));
  EXPECT_FALSE(accepts(open, R"(["a",1,2])"));
  EXPECT_FALSE(accepts(open, R"(["a"])"));  // no minItems: the whole tuple
  EXPECT_FALSE(accepts(open, R"([1,"a"])"));
  const std::string fixed = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2,"maxItems":2})";
  EXPECT_TRUE(accepts(fixed, R"(["a",1])"));
  EXPECT_FALSE(accepts(fixed, R"(["a",1,1])"));
  const std::string shorter = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"},{"type":"null"}],"items":false,"minItems":1})";
  EXPECT_TRUE(accepts(shorter, R"(["a"])"));
  EXPECT_TRUE(accepts(shorter, R"(["a",2])"));
  EXPECT_TRUE(accepts(shorter, R"(["a",2,null])"));
  EXPECT_FALSE(accepts(shorter, R"([])"));
  EXPECT_FALSE(accepts(shorter, R"(["a",2,null,null])"));
  // More items required than the tuple has: the rest from "items".
  const std::string more = R"({"type":"array","prefixItems":[{"const":0}],"items":{"const":1},"minItems":3})";
  EXPECT_FALSE(accepts(more, "[0,1]"));
  EXPECT_TRUE(accepts(more, "[0,1,1]"));
  EXPECT_TRUE(accepts(more, "[0,1,1,1,1]"));
  // maxItems below the tuple's length cuts it.
  EXPECT_TRUE(accepts(R"({"type":"array","prefixItems":[{"const":0},{"const":1}],"maxItems":1})", "[0]"));
  EXPECT_FALSE(accepts(R"({"type":"array","prefixItems":[{"const":0},{"const":1}],"maxItems":1})", "[0,1]"));
  expect_error(R"({"type":"array","prefixItems":[{"const":0}],"items":false,"minItems":2})", "minItems is over the tuple's length");
}

// allOf merged into one schema (schema_all_of.h): exactly the values every part accepts.
TEST(JsonSchema, AllOfAcceptsWhatEveryPartAccepts) {
  const std::string str = R"({"allOf":[{"type":"string"},{"maxLength":2},{"minLength":1}]})";
  EXPECT_TRUE(accepts(str, R"("ab")"));
  EXPECT_FALSE(accepts(str, R"("abc")"));
  EXPECT_FALSE(accepts(str, R"("")"));
  // The tightest bound of each keyword; integer within number.
  const std::string n = R"({"allOf":[{"type":["number","string"],"minimum":-5},{"type":"integer","maximum":20},
    {"minimum":-2,"maximum":40}]})";
  for (int x = -10; x <= 30; ++x) EXPECT_EQ(accepts(n, std::to_string(x)), x >= -2 && x <= 20) << x;
  EXPECT_FALSE(accepts(n, "1.5"));
  EXPECT_FALSE(accepts(n, R"("a")"));
  // Properties of every part, in order of first appearance; a property two parts constrain is held
  // to both; required is the union; the keywords beside allOf are a part too.
  const std::string obj = R"({"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer","minimum":0}},
    "required":["id"]}},"properties":{"tag":{"enum":["x","y"]}},
    "allOf":[{"$ref":"#/$defs/base"},{"properties":{"id":{"maximum":9},"v":{"type":"boolean"}},"required":["v"]}]})";
  EXPECT_TRUE(accepts(obj, R"({"tag":"x","id":3,"v":true})"));
  EXPECT_TRUE(accepts(obj, R"({"id":9,"v":false})"));
  EXPECT_FALSE(accepts(obj, R"({"id":10,"v":false})"));
  EXPECT_FALSE(accepts(obj, R"({"id":3})"));
  EXPECT_FALSE(accepts(obj, R"({"v":true})"));
  EXPECT_FALSE(accepts(obj, R"({"tag":"z","id":3,"v":true})"));
  // A part's additionalProperties: false drops what only other parts list (an optional c here).
  const std::string closed = R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false},
    {"type":"object","properties":{"c":{"type":"integer"}}}]})";
  EXPECT_TRUE(accepts(closed, R"({"a":1})"));
  EXPECT_FALSE(accepts(closed, R"({"a":1,"c":2})"));
  // An anyOf part is distributed over the others.
  const std::string dist = R"({"allOf":[{"anyOf":[{"type":"integer","minimum":0},{"type":"string"}]},{"maximum":5,"maxLength":1}]})";
  EXPECT_TRUE(accepts(dist, "5"));
  EXPECT_FALSE(accepts(dist, "6"));
  EXPECT_FALSE(accepts(dist, "-1"));
  EXPECT_TRUE(accepts(dist, R"("a")"));
  EXPECT_FALSE(accepts(dist, R"("ab")"));
  // Enums keep their common values; a const must be among them.
  const std::string e = R"({"allOf":[{"enum":[1,2,3,"a"]},{"enum":[3,"a",4]},{"type":"integer"}]})";
  EXPECT_TRUE(accepts(e, "3"));
  EXPECT_FALSE(accepts(e, "1"));
  EXPECT_FALSE(accepts(e, R"("a")"));
  EXPECT_TRUE(accepts(R"({"allOf":[{"const":2},{"enum":[1,2]}]})", "2"));
  // true parts are no constraint; allOf of one schema is that schema.
  EXPECT_TRUE(accepts(R"({"allOf":[true,{},{"type":"null"}]})", "null"));
  EXPECT_FALSE(accepts(R"({"allOf":[true,{},{"type":"null"}]})", "1"));
}

// An enum or const beside a type accepts only its values of that type (2.0 is an integer).
TEST(JsonSchema, EnumAndConstAreHeldToTheirType) {
  const std::string e = R"({"enum":[3,"a",2.0,null],"type":["integer","null"]})";
  EXPECT_TRUE(accepts(e, "3"));
  EXPECT_TRUE(accepts(e, "2.0"));
  EXPECT_TRUE(accepts(e, "null"));
  EXPECT_FALSE(accepts(e, R"("a")"));
  EXPECT_TRUE(accepts(R"({"const":1,"type":"number"})", "1"));
  expect_error(R"({"const":"a","type":"integer"})", "its const is not of its type");
  expect_error(R"({"enum":["a","b"],"type":"integer"})", "no value of its enum is of its type");
  expect_error(R"({"const":1,"enum":[2]})", "its const is not in its enum");
}

TEST(JsonSchema, AllOfWithoutAnExactMergeIsAnError) {
  expect_error(R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "no type in common");
  expect_error(R"({"allOf":[{"enum":[1]},{"enum":[2]}]})", "no value in common");
  expect_error(R"({"allOf":[{"const":1},{"const":2}]})", "two different consts");
  expect_error(R"({"allOf":[{"const":3},{"enum":[1,2]}]})", "const is not in its enum");
  expect_error(R"({"allOf":[{"type":"string","pattern":"^a"},{"pattern":"b$"}]})",
               "unsupported JSON Schema keyword 'pattern' at #/allOf");
  expect_error(R"({"allOf":[{"type":"string","format":"date"},{"format":"email"}]})", "'format'");
  expect_error(R"({"allOf":[{"type":"object","properties":{"a":{}},"additionalProperties":false},
    {"type":"object","properties":{"b":{}},"required":["b"]}]})",
               "'b' is required but one of its schemas allows no such property");
  expect_error(R"({"allOf":[false,{"type":"null"}]})", "matches nothing");
  expect_error(R"({"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"allOf":[{"$ref":"#/$defs/a"},{"type":"null"}]})",
               "nest too deeply");
  expect_error(R"({"allOf":[{"oneOf":[{"type":"integer"},{"type":"number"}]},{"minimum":0}]})",
               "keyword 'oneOf' at #/allOf: alternatives 0 and 1 may both match");
  expect_error(R"({"allOf":[{"$ref":"http://example.com/s.json"},{"type":"null"}]})", "'$ref'");
  expect_error(R"({"allOf":[]})", "expected a non-empty array");
  // Distributed anyOf parts multiply; past the bound it is refused, not grown.
  std::string many = R"({"allOf":[)";
  for (int i = 0; i < 5; ++i)
    many += std::string(i ? "," : "") + R"({"anyOf":[{"minimum":0},{"minimum":1},{"minimum":2},{"minimum":3}]})";
  expect_error(many + "]}", "more than 256 alternatives");
  // The budget is the whole schema's: an allOf nested in each distributed branch is merged again
  // for every copy, and 100 branches each carrying a 100-way distribution are 10,000 merges.
  std::string alts = "[", keyed = "[";
  for (int i = 0; i < 100; ++i) {
    alts += std::string(i ? "," : "") + R"({"const":)" + std::to_string(i) + "}";
    keyed += std::string(i ? "," : "") + R"({"properties":{"k":{"const":)" + std::to_string(i) + "}}}";
  }
  alts += "]", keyed += "]";
  const std::string inner = R"({"allOf":[{"anyOf":)" + alts + R"(},{"type":"integer"}]})";
  expect_error(R"({"allOf":[{"anyOf":)" + keyed + R"(},{"type":"object","properties":{"p":)" + inner + "}}]}",
               "more than 256 alternatives");
  EXPECT_NO_THROW(json_schema_to_grammar(std::string_view(inner)));
  // $refs through allOf form a DAG that doubles at each level: 2^12 copies of d0 here (2^k for k
  // levels: the depth bound alone would let 2^16 through) unless the copies are budgeted.
  std::string defs = R"({"$defs":{"d0":{"type":"object","properties":{"a":{"type":"string","description":")" +
                     std::string(2000, 'x') + R"("}}})";
  for (int i = 1; i <= 12; ++i)
    defs += ",\"d" + std::to_string(i) + R"(":{"allOf":[{"$ref":"#/$defs/d)" + std::to_string(i - 1) +
            R"("},{"$ref":"#/$defs/d)" + std::to_string(i - 1) + R"("}]})";
  expect_error(defs + R"(},"allOf":[{"$ref":"#/$defs/d12"},{"type":"object"}]})", "schema nodes");
  // The same fan-out to leaves that copy nothing (annotations only): each visit is charged.
  std::string fan = R"({"$defs":{"e0":{"description":"x"})";
  for (int i = 1; i <= 9; ++i) {
    fan += ",\"e" + std::to_string(i) + R"(":{"allOf":[)";
    for (int k = 0; k < 10; ++k) fan += std::string(k ? "," : "") + R"({"$ref":"#/$defs/e)" + std::to_string(i - 1) + R"("})";
    fan += "]}";
  }
  expect_error(fan + R"(},"allOf":[{"$ref":"#/$defs/e9"},{"type":"object"}]})", "schema nodes");
  // A part's items beside another part's prefixItems would apply from another index.
  expect_error(R"({"allOf":[{"type":"array","prefixItems":[{"type":"string"}]},{"items":{"type":"integer"}}]})",
               "keyword 'items' at #/allOf");
  expect_error(R"({"allOf":[{"prefixItems":[{}]},{"items":false}]})", "keyword 'items'");
  EXPECT_TRUE(accepts(R"({"allOf":[{"prefixItems":[{"const":1}],"items":{"const":2}},{"prefixItems":[{"const":1}],"maxItems":2}]})",
                      "[1,2]"));
  // Draft 4's boolean exclusive flag belongs to its own part's bound.
  expect_error(R"({"allOf":[{"minimum":5,"exclusiveMinimum":true},{"type":"integer","minimum":7,"maximum":7}]})",
               "keyword 'exclusiveMinimum'");
  // An unsupported keyword in one part is still named.
  expect_error(R"({"allOf":[{"type":"string"},{"not":{"const":"a"}}]})", "'not'");
}

TEST(JsonSchema, OneOfWithDisjointBranchesCompiles) {
  for (const char* s : {R"({"oneOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]})",
                        R"({"oneOf":[{"const":1},{"const":2},{"enum":["a",3]}]})",
                        R"({"$defs":{"a":{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]}},
                           "oneOf":[{"$ref":"#/$defs/a"},{"type":"object","properties":{"k":{"enum":["b","c"]}},"required":["k"]}]})"}) {
    EXPECT_NO_THROW(json_schema_to_grammar(std::string_view(s))) << s;
  }
}

// A $ref is a JSON pointer (RFC 6901): "~1" stands for '/', "~0" for '~', unescaped once
// ("~00" is the key "~0", "~01" the key "~1", never a '~' or a '/').
TEST(JsonSchema, RefPointersUnescapeTildeSequencesOnce) {
  const std::string s = R"({"$defs":{"a/b":{"const":1},"~0":{"const":2},"x~1":{"const":3}},"type":"array",
    "prefixItems":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/~00"},{"$ref":"#/$defs/x~01"}],"items":false})";
  EXPECT_TRUE(accepts(s, "[1,2,3]"));
  EXPECT_FALSE(accepts(s, "[1,2,2]"));
  expect_error(R"({"$defs":{"a/b":{"const":1}},"$ref":"#/$defs/a/b"})", "points to nothing");
  expect_error(R"({"$defs":{"~0":{"const":2}},"$ref":"#/$defs/~0"})", "points to nothing");
}

}  // namespace
}  // namespace seam::grammar::test
