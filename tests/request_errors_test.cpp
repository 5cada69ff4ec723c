// Finding 6 of issue 26: client input never escapes as a non-ApiError (the
// server's 500) and no error text shows nlohmann's internals. A number past
// the double range names its field, at the top level and nested; the
// --prompts-file reader checks every field's type and range itself.
#include <gtest/gtest.h>

#include "cli/request_json.h"
#include "test_util.h"
#include "core/json_parse.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace seam {
namespace {

// Parses and returns the ApiError; fails the test on success or on any other exception.
ApiError api_error_of(const std::string& body, ApiKind kind = ApiKind::completion) {
  try {
    (void)parse_api_request(body, kind);
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << body << ": escaped as " << typeid(e).name() << ": " << e.what();
    return ApiError(500, e.what());
  }
  ADD_FAILURE() << body << ": accepted";
  return ApiError(200, "");
}

TEST(RequestErrors, NumberOverflowNamesTheField) {
  for (const char* field : {"temperature", "top_p", "top_k", "min_p", "max_tokens", "seed", "n", "frequency_penalty",
                            "presence_penalty", "repetition_penalty"}) {
    for (const char* number : {"1e400", "-1e400", "123456789e999"}) {
      const ApiError e = api_error_of(std::string("{\"prompt\": \"x\", \"") + field + "\": " + number + "}");
      EXPECT_EQ(e.status(), 400) << field;
      EXPECT_EQ(e.param(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(api_error_of("{\"prompt\": [1, 2, 1e400]}").param(), "prompt[2]");
  EXPECT_EQ(api_error_of("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                         "\"stream_options\": {\"include_usage\": 1e999}}",
                         ApiKind::chat)
                .param(),
            "stream_options.include_usage");
  EXPECT_EQ(api_error_of("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": 9e999}]}", ApiKind::chat)
                .param(),
            "messages[1].role");
  EXPECT_EQ(api_error_of("1e400").status(), 400);
}

TEST(RequestErrors, MalformedBodiesAre400WithoutParserTags) {
  for (const char* body : {"", "{", "{\"prompt\": \"x\"", "{\"prompt\": tru}", "[1e400]", "{\"a\": \"\\ud800\"}",
                           "{\"prompt\": \"\xff\"}", "{\"prompt\": \"x\"} trailing", "nul", "\"\\u00\"",
                           "{\"prompt\": \"x\", \"prompt\": 1}", "{\"prompt\": [[1e400]]}", "{\"prompt\": -0}",
                           "{\"prompt\": \"x\", \"stop\": [1]}", "{\"prompt\": \"x\", \"seed\": 18446744073709551615}",
                           "{\"prompt\": \"x\", \"max_tokens\": 1.5}", "{\"prompt\": [1, \"a\"]}"}) {
    const ApiError e = api_error_of(body);
    EXPECT_EQ(e.status(), 400) << body;
  }
}

// Error texts quote at most a bounded part of the body (a 1 MB bad token or role is not echoed back).
TEST(RequestErrors, ErrorTextsDoNotEchoLongInput) {
  const std::string long_text(1 << 20, 'r');
  EXPECT_LT(std::string(api_error_of("{\"prompt\": \"" + long_text + "\u001f\"}").what()).size(), 400u);
  const ApiError role = api_error_of("{\"messages\": [{\"role\": \"" + long_text + "\", \"content\": \"x\"}]}", ApiKind::chat);
  EXPECT_LT(std::string(role.what()).size(), 200u);
  EXPECT_EQ(role.param(), "messages[0].role");
}

// request_json_fuzz: 1e400 a thousand arrays deep gave a 3 kB path in the message and param.
TEST(RequestErrors, DeeplyNestedOverflowHasABoundedPath) {
  const ApiError e = api_error_of(std::string(1000, '[') + "1e400" + std::string(1000, ']'));
  EXPECT_EQ(e.status(), 400);
  EXPECT_LT(e.param().size(), 130u);
  EXPECT_LT(std::string(e.what()).size(), 400u);
  const std::string seed = test::read_file(std::string(SEAM_SOURCE_DIR) + "/fuzz/corpus/request_json_fuzz/regress_44f102a28fa6");
  EXPECT_LT(std::string(api_error_of(seed.substr(1)).what()).size(), 400u);
}

// JSON nested past k_max_json_depth is refused before anything walks it: a 200 kB body (or string
// field) of '[' overflowed the stack of whatever recursed over it (the chat template's values: a
// segfault of `seam chat-template` with such tools, and of the server's handler).
TEST(RequestErrors, DeepNestingIsRefusedBeforeAnythingWalksIt) {
  const auto nested = [](size_t d) { return std::string(d, '[') + std::string(d, ']'); };
  EXPECT_NO_THROW((void)parse_json_document(nested(k_max_json_depth)));
  EXPECT_THROW((void)parse_json_document(nested(k_max_json_depth + 1)), JsonParseError);
  EXPECT_EQ(json_nesting_depth("{\"a\": \"[[[{{{\\\"[\", \"b\": [[{}]]}"), 4u);  // brackets in strings do not count
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  const ApiError tools = api_error_of(chat + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": )" +
                                          nested(100000) + "}}]}",
                                      ApiKind::chat);
  EXPECT_EQ(tools.status(), 400);
  EXPECT_NE(std::string(tools.what()).find("nested deeper than 256 levels"), std::string::npos) << tools.what();
  EXPECT_LT(std::string(tools.what()).size(), 400u);
  // JSON held in string fields: a schema given as text, a past tool call's arguments.
  const ApiError schema = api_error_of(chat + R"("json_schema": ")" + nested(5000) + "\"}", ApiKind::chat);
  EXPECT_EQ(schema.status(), 400);
  EXPECT_NE(std::string(schema.what()).find("nests deeper than 256"), std::string::npos) << schema.what();
  const ApiError args = api_error_of(
      R"({"tools": [{"type": "function", "function": {"name": "f"}}], "messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": ")" +
          nested(5000) + R"("}}]}]})",
      ApiKind::chat);
  EXPECT_EQ(args.status(), 400);
  EXPECT_NE(std::string(args.what()).find("nests deeper than 256"), std::string::npos) << args.what();
}

TEST(RequestErrors, JsonErrorTextDropsTheLibraryTag) {
  try {
    (void)parse_json_document("{\"a\": }");
    FAIL();
  } catch (const JsonParseError& e) {
    EXPECT_TRUE(e.field().empty());
    EXPECT_EQ(std::string(e.what()).find("[json.exception"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 1, column 7"), std::string::npos) << e.what();
  }
}

std::string cli_error_of(const std::string& line) {
  try {
    (void)cli::parse_request_line(line, SamplingParams{}, "p.jsonl:3");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("p.jsonl:3"), std::string::npos) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << line << ": escaped as " << e.what();
    return "";
  }
  ADD_FAILURE() << line << ": accepted";
  return "";
}

TEST(RequestErrors, PromptsFileFieldsAreCheckedForTypeAndRange) {
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"temperature\": 1e400}").find("temperature"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"temperature\": 1e300}").find("temperature"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"max_new_tokens\": 1e10}").find("max_new_tokens"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"max_new_tokens\": 3000000000}").find("max_new_tokens"),
            std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"top_k\": -2}").find("top_k"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"input_ids\": [1, -1]}").find("input_ids"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"input_ids\": [1, 1e400]}").find("input_ids"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"stop\": [\"a\", 2]}").find("stop"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"seed\": 1.5}").find("seed"), std::string::npos);
  EXPECT_NE(cli_error_of("{\"prompt\": \"x\", \"ignore_eos\": 1}").find("ignore_eos"), std::string::npos);
  const cli::RequestSpec s = cli::parse_request_line(
      "{\"prompt\": \"x\", \"max_new_tokens\": 7, \"temperature\": 0.5, \"seed\": -1, \"stop\": \"z\"}",
      SamplingParams{}, "p");
  EXPECT_EQ(s.params.max_new_tokens, 7);
  EXPECT_FLOAT_EQ(s.params.temperature, 0.5f);
  EXPECT_EQ(s.params.seed, std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(s.params.stop, std::vector<std::string>{"z"});
}

}  // namespace
}  // namespace seam
