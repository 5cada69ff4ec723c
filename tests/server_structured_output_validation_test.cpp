// Structured output end to end over HTTP (seam serve on stories260K, CPU):
// every output of a constrained request parses and validates with a real
// validator -- Python's jsonschema (Debian's python3-jsonschema) for JSON
// Schema, Python's re.fullmatch for regexes (an EBNF case carries an
// equivalent regex), membership for choices -- through
// tools/validate_grammar_samples.py. A suite of schemas covers every keyword
// the grammar enforces (grammar/json_schema_to_grammar.h), each sent through
// one of the API spellings (OpenAI, sglang, vLLM), on /v1/completions (a batch
// of a short and a long prompt, n = 2: the long prompt's 16-token chunks ride
// with the short one's decodes) and on chat, at temperature 0 and seeded
// temperature 1, on a server with graphs and one without, both with
// --enable-mixed-chunk --chunked-prefill-size 16. A bounded case (every
// sentence short) must stop within max_tokens and is validated; an unbounded
// one (any object, email, a number, time fractions) must stop or be cut with
// "length", and is validated when it stops. Named and "required"
// tool_choice give tool calls whose arguments validate against the tool's
// parameters, streamed or not. A constraint that does not compile is a 400
// naming the field it came from.
//
// Needs python3 with jsonschema: without it the test fails (CI installs
// python3-jsonschema through scripts/setup.sh), it never skips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

struct Case {
  std::string name;
  std::string field;  // the request field, as JSON text of {"<field>": <value>}
  std::string check;  // the validator's key: "schema", "regex" or "choice"
  std::string check_value;  // JSON text of the schema / the regex as a JSON string / the choice list
  bool bounded = true;
};

// {"<field>": <value>} for a schema, through one of the spellings (rotated by `k`).
std::string schema_field(const std::string& schema, int k) {
  switch (k % 6) {
    case 0: return R"({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "strict": true, "schema": )" + schema + "}}}";
    case 1: return R"({"json_schema": )" + json(schema).dump() + "}";  // sglang: a string of JSON
    case 2: return R"({"guided_json": )" + schema + "}";
    case 3: return R"({"structured_outputs": {"json": )" + schema + "}}";
    case 4: return R"({"json_schema": )" + schema + "}";  // sglang also takes the object
    default: return R"({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": )" + schema + "}}}";
  }
}

std::vector<Case> suite() {
  const std::vector<std::pair<std::string, std::string>> schemas = {
      {"properties_required_no_additional",
       R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"], "additionalProperties": false})"},
      {"optional_properties",
       R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"type": "boolean"}}, "additionalProperties": false})"},
      {"nested_objects_and_arrays",
       R"({"type": "object", "properties": {"user": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 999}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3}}, "required": ["id", "tags"]}, "scores": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100}, "maxItems": 4}}, "required": ["user", "scores"]})"},
      {"top_level_array",
       R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4})"},
      {"enum_const",
       R"({"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}, "version": {"const": "v1"}, "n": {"enum": [1, 2.5, null, true]}, "pair": {"const": [1, {"a": true}]}}, "required": ["color", "version", "n", "pair"]})"},
      {"any_of",
       R"({"type": "object", "properties": {"v": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 50}, {"type": "string", "maxLength": 6}, {"type": "null"}]}}, "required": ["v"]})"},
      {"one_of_discriminated",
       R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["kind", "r"]}, {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["kind", "side"]}]})"},
      {"ref_defs",
       R"({"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": -9, "maximum": 9}, "y": {"type": "integer", "minimum": -9, "maximum": 9}}, "required": ["x", "y"]}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/$defs/point"}}, "required": ["a", "b"]})"},
      {"ref_recursive",
       R"({"$defs": {"n": {"type": "object", "properties": {"v": {"enum": [1, 2]}, "k": {"type": "array", "items": {"$ref": "#/$defs/n"}, "maxItems": 2}}, "required": ["v", "k"]}}, "$ref": "#/$defs/n"})"},
      {"string_pattern_lengths",
       R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}, "word": {"type": "string", "minLength": 2, "maxLength": 5}}, "required": ["code", "word"]})"},
      {"string_formats",
       R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"}, "ip": {"type": "string", "format": "ipv4"}}, "required": ["d", "id", "ip"]})"},
      {"integer_bounds",
       R"({"type": "object", "properties": {"i": {"type": "integer", "minimum": -5, "maximum": 5}, "j": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}}, "required": ["i", "j"]})"},
      {"null_boolean",
       R"({"type": "object", "properties": {"a": {"type": "null"}, "b": {"type": "boolean"}, "c": {"type": ["boolean", "null"]}}, "required": ["a", "b", "c"]})"},
      {"all_of",
       R"({"allOf": [{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 99}}, "required": ["id"]}, {"properties": {"ok": {"type": "boolean"}, "id": {"maximum": 50}}, "required": ["ok"]}]})"},
      {"tuple_then_items",
       R"({"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 9}, {"enum": ["a", "b"]}], "items": {"type": "boolean"}, "maxItems": 4})"},
  };
  std::vector<Case> cases;
  int k = 0;
  for (const auto& [name, schema] : schemas) cases.push_back({name, schema_field(schema, k++), "schema", schema, true});
  // Unbounded (time fractions, emails, numbers, any object): validated when they stop.
  cases.push_back({"time_formats",
                   schema_field(R"({"type": "object", "properties": {"t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"}}, "required": ["t", "dt"]})", k++),
                   "schema", R"({"type": "object", "properties": {"t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"}}, "required": ["t", "dt"]})", false});
  cases.push_back({"email_number",
                   schema_field(R"({"type": "object", "properties": {"e": {"type": "string", "format": "email"}, "x": {"type": "number", "minimum": 0}}, "required": ["e", "x"]})", k++),
                   "schema", R"({"type": "object", "properties": {"e": {"type": "string", "format": "email"}, "x": {"type": "number", "minimum": 0}}, "required": ["e", "x"]})", false});
  const std::string ranges = R"({"type": "object", "properties": {"p": {"type": "number", "minimum": 0, "maximum": 1}, "t": {"type": "number", "exclusiveMinimum": -5.5, "maximum": -0.25}}, "required": ["p", "t"]})";
  cases.push_back({"number_ranges", schema_field(ranges, k++), "schema", ranges, false});
  const std::string formats = R"({"type": "object", "properties": {"ip6": {"type": "string", "format": "ipv6"}, "host": {"type": "string", "format": "hostname"}, "d": {"type": "string", "format": "duration"}, "u": {"type": "string", "format": "uri"}}, "required": ["ip6", "host", "d", "u"]})";
  cases.push_back({"more_formats", schema_field(formats, k++), "schema", formats, false});
  // pattern / format beside minLength / maxLength (the length-bounded intersection), pydantic's HttpUrl among them.
  const std::string bounded = R"({"type": "object", "properties": {"slug": {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 3, "maxLength": 12}, "url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083}, "code": {"type": "string", "pattern": "[0-9]", "maxLength": 4}}, "required": ["slug", "url", "code"]})";
  cases.push_back({"pattern_lengths", schema_field(bounded, k++), "schema", bounded, false});
  cases.push_back({"json_object", R"({"response_format": {"type": "json_object"}})", "schema", R"({"type": "object"})", false});
  cases.push_back({"json_object_vllm", R"({"structured_outputs": {"json_object": true}})", "schema", R"({"type": "object"})", false});
  // Regexes, EBNF (with an equivalent regex to check), choices.
  cases.push_back({"regex_sglang", R"({"regex": "(yes|no) [0-9]{1,3}"})", "regex", R"("(yes|no) [0-9]{1,3}")"});
  cases.push_back({"regex_guided", R"({"guided_regex": "[a-z]{3,8}@[a-z]{2,5}\\.com"})", "regex", R"("[a-z]{3,8}@[a-z]{2,5}\\.com")"});
  cases.push_back({"regex_structured_outputs", R"({"structured_outputs": {"regex": "[A-Z][a-z]{1,6}( [a-z]{1,6}){0,2}\\."}})", "regex",
                   R"("[A-Z][a-z]{1,6}( [a-z]{1,6}){0,2}\\.")"});
  cases.push_back({"ebnf_sglang", R"({"ebnf": "root ::= \"The answer is \" letter \".\"\nletter ::= \"A\" | \"B\" | \"C\""})",
                   "regex", R"("The answer is (A|B|C)\\.")"});
  cases.push_back({"ebnf_guided_grammar", R"({"guided_grammar": "root ::= digit digit? \"-\" word\ndigit ::= [0-9]\nword ::= [a-z] [a-z]? [a-z]?"})",
                   "regex", R"("[0-9][0-9]?-[a-z][a-z]?[a-z]?")"});
  cases.push_back({"ebnf_structured_outputs", R"j({"structured_outputs": {"grammar": "root ::= (\"ab\" | \"cd\") (\"!\" | \"?\")"}})j",
                   "regex", R"j("(ab|cd)(!|\\?)")j"});
  cases.push_back({"choice_guided", R"({"guided_choice": ["red", "green", "blue sky"]})", "choice", R"(["red", "green", "blue sky"])"});
  cases.push_back({"choice_structured_outputs", R"({"structured_outputs": {"choice": ["yes", "no"]}})", "choice", R"(["yes", "no"])"});
  return cases;
}

const char* k_long_prompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her dog. One day "
    "she saw a big red ball in the park and she wanted to play with it, so she ran to her mom and asked";

// python3 with jsonschema, or a failure saying how to get it.
void require_jsonschema() {
  const int rc = std::system("python3 -c 'import jsonschema' > /dev/null 2>&1");
  ASSERT_EQ(rc, 0) << "python3 with the jsonschema module is needed (Debian: apt-get install python3-jsonschema; "
                      "scripts/setup.sh installs it)";
}

// Runs the validator on `samples` (JSON lines); expects every one valid.
void validate_samples(const std::vector<json>& samples, const std::string& tag) {
  const std::string dir = test::make_temp_dir("so_" + tag);
  std::string lines;
  for (const json& s : samples) lines += s.dump() + "\n";
  test::write_file(dir + "/samples.jsonl", lines);
  const std::string cmd = "python3 " + std::string(SEAM_SOURCE_DIR) + "/tools/validate_grammar_samples.py " + dir +
                          "/samples.jsonl > " + dir + "/out.txt 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = test::read_file(dir + "/out.txt");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::to_string(samples.size()) + " samples, 0 invalid"), std::string::npos) << out;
}

class ServerStructuredOutput : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    const std::string dir = test::make_temp_dir("so_tmpl");
    test::write_file(dir + "/chat.jinja",
                     "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }} {% endfor %}{{ '\\n' }}{% endif %}"
                     "{% for m in messages %}{{ m.role }}:{{ m.content }}{{ '\\n' }}{% endfor %}");
    const std::vector<std::string> common = {"--chat-template", dir + "/chat.jinja", "--enable-mixed-chunk",
                                             "--chunked-prefill-size", "16"};
    graphs_ = new test::ServerProcess(common);
    std::vector<std::string> eager = common;
    eager.push_back("--disable-cuda-graph");
    eager_ = new test::ServerProcess(eager);
  }
  static void TearDownTestSuite() {
    delete graphs_;
    delete eager_;
  }
  static json post(test::ServerProcess* s, const std::string& route, const std::string& body, int status = 200) {
    HttpClient cli("127.0.0.1", s->port());
    cli.set_read_timeout(120, 0);
    auto res = cli.Post(route, body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, status) << body << "\n" << res->body;
    if (route == "/v1/chat/completions" && body.find("\"stream\": true") != std::string::npos) return json(res->body);
    return json::parse(res->body, nullptr, false);
  }
  // The choices of a streamed chat response folded into messages (tool calls by index).
  static std::vector<json> fold_stream(const std::string& sse) {
    std::vector<json> out;
    size_t pos = 0;
    while ((pos = sse.find("data: {", pos)) != std::string::npos) {
      const size_t end = sse.find("\n\n", pos);
      const json c = json::parse(sse.substr(pos + 6, end - pos - 6));
      pos = end;
      for (const json& ch : c["choices"]) {
        const size_t i = ch["index"];
        while (out.size() <= i) out.push_back({{"content", ""}, {"tool_calls", json::array()}, {"finish_reason", nullptr}});
        const json& d = ch["delta"];
        if (d.contains("content") && d["content"].is_string()) out[i]["content"] = out[i]["content"].get<std::string>() + d["content"].get<std::string>();
        for (const json& t : d.value("tool_calls", json::array())) {
          json& calls = out[i]["tool_calls"];
          const size_t k = t["index"];
          if (t.contains("id")) {
            EXPECT_EQ(calls.size(), k) << "a call's first delta, in order";
            EXPECT_EQ(t["function"]["arguments"], "") << "the name comes first";
            calls.push_back({{"id", t["id"]}, {"name", t["function"]["name"]}, {"arguments", ""}});
          } else {
            EXPECT_LT(k, calls.size()) << "arguments before the call's name";
            if (k >= calls.size()) continue;
            calls[k]["arguments"] = calls[k]["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
          }
        }
        if (!ch["finish_reason"].is_null()) out[i]["finish_reason"] = ch["finish_reason"];
      }
    }
    return out;
  }
  static test::ServerProcess* graphs_;
  static test::ServerProcess* eager_;
};

test::ServerProcess* ServerStructuredOutput::graphs_ = nullptr;
test::ServerProcess* ServerStructuredOutput::eager_ = nullptr;

// The body: `base` (a JSON object) with the members of `extra` (JSON object text, member order kept).
std::string merged(const ojson& base, const std::string& extra) {
  ojson b = base;
  const ojson more = ojson::parse(extra);
  for (auto it = more.begin(); it != more.end(); ++it) b[it.key()] = *it;
  return b.dump();
}

// What one server's runs gave: the samples to validate and the counts.
struct Tally {
  std::vector<json> samples;
  int n_stopped = 0, n_cut = 0, n_unbounded_stopped = 0;
};

// Every case at temperature 0 and 1 on `server`, into `t`.
void run_suite(test::ServerProcess* server, const std::string& label, Tally& t) {
  for (double temperature : {0.0, 1.0})
    for (const Case& c : suite()) {
      const std::string where = c.name + " at temperature " + std::to_string(temperature) + " (" + label + ")";
      // Bounded cases stop well within 200 tokens; unbounded ones get less (most are cut, time is short).
      const int max_tokens = c.bounded ? 200 : 64;
      // Completions: a short and a long prompt, two choices each.
      const ojson comp = {{"prompt", {"Once upon a time", k_long_prompt}}, {"max_tokens", max_tokens}, {"n", 2},
                          {"temperature", temperature}, {"seed", 11}};
      const json r = ServerStructuredOutput::post(server, "/v1/completions", merged(comp, c.field));
      // Chat: one message, two choices.
      const ojson chat = {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}},
                          {"max_tokens", max_tokens}, {"n", 2}, {"temperature", temperature}, {"seed", 5}};
      const json rc = ServerStructuredOutput::post(server, "/v1/chat/completions", merged(chat, c.field));
      ASSERT_TRUE(r.contains("choices") && rc.contains("choices")) << where << r.dump() << rc.dump();
      ASSERT_EQ(r["choices"].size(), 4u) << where;
      ASSERT_EQ(rc["choices"].size(), 2u) << where;
      std::vector<std::pair<std::string, std::string>> outputs;  // (text, finish_reason)
      for (const json& ch : r["choices"]) outputs.push_back({ch["text"], ch["finish_reason"]});
      for (const json& ch : rc["choices"]) outputs.push_back({ch["message"]["content"], ch["finish_reason"]});
      for (const auto& [text, finish] : outputs) {
        if (finish != "stop") {
          EXPECT_FALSE(c.bounded) << where << ": a bounded case ended by " << finish << ": " << text;
          EXPECT_EQ(finish, "length") << where;
          ++t.n_cut;
          continue;
        }
        ++t.n_stopped;
        if (!c.bounded) ++t.n_unbounded_stopped;
        t.samples.push_back({{"case", where}, {"output", text}, {c.check, json::parse(c.check_value)}});
      }
    }
}

TEST_F(ServerStructuredOutput, EveryOutputValidates) {
  require_jsonschema();
  // The two servers at once (two cores: half the time).
  Tally graphs, eager;
  std::thread other([&] { run_suite(eager_, "eager", eager); });
  run_suite(graphs_, "graphs", graphs);
  other.join();
  std::vector<json> samples = graphs.samples;
  samples.insert(samples.end(), eager.samples.begin(), eager.samples.end());
  const int n_cases = int(suite().size());
  EXPECT_EQ(graphs.n_stopped + graphs.n_cut, n_cases * 2 * 6);
  EXPECT_EQ(eager.n_stopped + eager.n_cut, n_cases * 2 * 6);
  // Unbounded cases rarely stop on stories260K: they check that such constraints are accepted and cut
  // with "length" (engine_structured_output_test checks a cut output is a prefix the grammar accepts).
  validate_samples(samples, "suite");
  std::printf("%zu outputs validated (%d of unbounded cases), %d unbounded outputs cut by max_tokens\n",
              samples.size(), graphs.n_unbounded_stopped + eager.n_unbounded_stopped, graphs.n_cut + eager.n_cut);
}

TEST_F(ServerStructuredOutput, ConstraintsThatDoNotCompileAre400sNamingTheField) {
  struct Bad {
    const char* extra;
    const char* param;
  };
  // Constraints nested past the parsers' bounds (a hostile request: 100,000 groups or stacked
  // quantifiers overflowed the compiling thread's stack before they were bounded).
  const std::string deep_regex = ojson{{"regex", std::string(100000, '(') + "a" + std::string(100000, ')')}}.dump();
  const std::string stacked_regex = ojson{{"guided_regex", "a" + std::string(100000, '*')}}.dump();
  const std::string deep_ebnf =
      ojson{{"ebnf", "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')}}.dump();
  for (const Bad& b : std::vector<Bad>{
           {deep_regex.c_str(), "regex"},
           {stacked_regex.c_str(), "guided_regex"},
           {deep_ebnf.c_str(), "ebnf"},
           {R"({"regex": "(ab"})", "regex"},
           {R"({"guided_regex": "a{3,1}"})", "guided_regex"},
           {R"({"ebnf": "root ::= missing"})", "ebnf"},
           {R"j({"structured_outputs": {"grammar": "root ::= ("}})j", "structured_outputs.grammar"},
           {R"({"json_schema": {"type": "string", "contentEncoding": "base64", "not": {}}})", "json_schema"},
           {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "patternProperties": {"a": {}}}}}})",
            "response_format"},
           {R"({"guided_json": {"type": "integer", "multipleOf": 3}})", "guided_json"},
       }) {
    for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
      const ojson base = std::string(route) == "/v1/completions"
                             ? ojson{{"prompt", "Once"}, {"max_tokens", 4}}
                             : ojson{{"messages", {{{"role", "user"}, {"content", "Once"}}}}, {"max_tokens", 4}};
      const json j = post(graphs_, route, merged(base, b.extra), 400);
      EXPECT_EQ(j["error"]["param"], b.param) << b.extra << ": " << j.dump();
      EXPECT_GT(j["error"]["message"].get<std::string>().size(), 10u) << j.dump();
    }
  }
}

const char* k_tools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}, "loud": {"type": "boolean"}}, "required": ["hour", "loud"]}}},
  {"type": "function", "function": {"name": "ping"}}])";  // no parameters: {"type": "object"}, strict: {}

TEST_F(ServerStructuredOutput, ForcedToolCallsValidateAgainstTheToolsParameters) {
  require_jsonschema();
  const ojson tools = ojson::parse(k_tools);
  auto schema_of = [&](const std::string& name) {
    for (const ojson& t : tools)
      if (t["function"]["name"] == name) return t["function"].value("parameters", ojson{{"type", "object"}});
    ADD_FAILURE() << "no tool " << name;
    return ojson();
  };
  std::vector<json> samples;
  int n_calls = 0;
  for (test::ServerProcess* server : {graphs_, eager_})
    for (double temperature : {0.0, 1.0})
      for (const std::string choice : {R"({"type": "function", "function": {"name": "get_weather"}})",
                                       R"({"type": "function", "function": {"name": "set_alarm"}})",
                                       R"({"type": "function", "function": {"name": "ping"}})", R"("required")"}) {
        const std::string body = R"({"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": )" +
                                 std::string(k_tools) + R"(, "tool_choice": )" + choice +
                                 R"(, "max_tokens": 200, "n": 2, "seed": 3, "temperature": )" +
                                 std::to_string(temperature);
        const json whole = post(server, "/v1/chat/completions", body + "}");
        const json streamed = post(server, "/v1/chat/completions", body + R"(, "stream": true})");
        ASSERT_TRUE(whole.contains("choices")) << whole.dump();
        const std::vector<json> folded = fold_stream(streamed.get<std::string>());
        ASSERT_EQ(folded.size(), 2u);
        for (size_t i = 0; i < 2; ++i) {
          const json& ch = whole["choices"][i];
          const json& m = ch["message"];
          const std::string where = choice + " choice " + std::to_string(i);
          const bool named = choice != R"("required")";
          if (named && ch["finish_reason"] == "length") {
            ADD_FAILURE() << where << ": bounded arguments cut by max_tokens";
            continue;
          }
          EXPECT_EQ(ch["finish_reason"], "tool_calls") << where << m.dump();
          EXPECT_TRUE(m["content"].is_null()) << where << m.dump();
          ASSERT_TRUE(m.contains("tool_calls")) << where << m.dump();
          const json& calls = m["tool_calls"];
          if (named) EXPECT_EQ(calls.size(), 1u) << where;
          for (const json& call : calls) {
            EXPECT_EQ(call["type"], "function");
            EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call.dump();
            const std::string name = call["function"]["name"];
            if (named) EXPECT_EQ(name, ojson::parse(choice)["function"]["name"].get<std::string>()) << where;
            samples.push_back({{"case", where + " " + name},
                               {"output", call["function"]["arguments"]},
                               {"schema", json::parse(schema_of(name).dump())}});
            ++n_calls;
          }
          // The stream folds to the same calls (the same seed: the same text).
          EXPECT_EQ(folded[i]["finish_reason"], ch["finish_reason"]) << where;
          EXPECT_EQ(folded[i]["content"], "") << where;
          ASSERT_EQ(folded[i]["tool_calls"].size(), calls.size()) << where << streamed.dump();
          for (size_t k = 0; k < calls.size(); ++k) {
            EXPECT_EQ(folded[i]["tool_calls"][k]["name"], calls[k]["function"]["name"]) << where;
            EXPECT_EQ(folded[i]["tool_calls"][k]["arguments"], calls[k]["function"]["arguments"]) << where;
          }
        }
      }
  EXPECT_GE(n_calls, 2 * 2 * 4 * 2);
  validate_samples(samples, "tools");
}

}  // namespace
}  // namespace seam
