// JSON Schema constraints end to end on the CPU: for a suite of schemas that
// covers every supported keyword, random token sequences drawn from the masks
// (two real tokenizers) must parse as JSON and validate against the schema;
// what the engine cannot enforce must be an error naming the keyword.
#include <cstdlib>
#include <fstream>

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

TEST(JsonSchema, StringLengthCountsEscapesAsOneCharacter) {
  const std::string s = R"({"type":"string","minLength":2,"maxLength":2})";
  EXPECT_TRUE(accepts(s, R"("a\n")"));
  EXPECT_TRUE(accepts(s, R"("\u00e9x")"));
  EXPECT_TRUE(accepts(s, "\"\xC3\xA9x\""));
  EXPECT_FALSE(accepts(s, R"("\ud83d\ude00")"));  // surrogate escapes are never produced
  EXPECT_FALSE(accepts(s, R"("abc")"));
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
  expect_error(R"({"type":"number","maximum":3.5})", "'maximum'");
  expect_error(R"({"type":"number","minimum":1})", "'minimum'");
  expect_error(R"({"type":"string","format":"hostname"})", "format 'hostname'");
  expect_error(R"J({"type":"string","pattern":"(a)\\1"})J", "backreferences");
  expect_error(R"J({"type":"string","pattern":"a(?=b)"})J", "lookaround");
  expect_error(R"({"type":"string","pattern":"^a+","maxLength":3})", "'maxLength'");
  expect_error(R"({"type":"object","minProperties":1})", "'minProperties'");
  expect_error(R"({"if":{"type":"string"},"then":{"minLength":1}})", "'if'");
  expect_error(R"({"allOf":[{"type":"string"},{"maxLength":2}]})", "'allOf'");
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
