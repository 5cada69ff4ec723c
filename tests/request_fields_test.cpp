// The request-field table (server/request_fields.h), walked row by row: for
// each row and each route it lists, a body with that field gets what the row
// says -- honoured and harmless fields are accepted, refused ones are a 400
// naming the field unless their value asks for nothing -- and a field in no
// row is a 400 naming it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/request_fields.h"

namespace seam {
namespace {

using json = nlohmann::json;

constexpr Endpoint k_endpoints[] = {k_completions, k_chat, k_tokenize, k_detokenize};

// A body every route accepts without the field under test.
json base_body(Endpoint e) {
  switch (e) {
    case k_completions: return {{"prompt", "x"}, {"max_tokens", 1}};
    case k_chat: return {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 1}};
    case k_tokenize: return {{"prompt", "x"}};
    default: return {{"tokens", {1, 2}}};
  }
}

// A valid value of each honoured field (per route where they differ). A row
// flipped to honoured needs one here: the walk below fails until it has it.
json honoured_value(const std::string& name, Endpoint e) {
  static const std::map<std::string, json> values = {
      {"model", "m"},
      {"max_tokens", 3},
      {"max_completion_tokens", 3},
      {"temperature", 0.5},
      {"top_p", 0.9},
      {"top_k", 4},
      {"min_p", 0.1},
      {"frequency_penalty", 0.5},
      {"presence_penalty", 0.5},
      {"repetition_penalty", 1.1},
      {"seed", 7},
      {"stop", "."},
      {"stop_token_ids", {2}},
      {"ignore_eos", true},
      {"disable_speculative", true},
      {"skip_special_tokens", false},
      {"n", 2},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
      {"add_special_tokens", false},
      {"add_generation_prompt", false},
      {"continue_final_message", true},
      {"chat_template_kwargs", {{"enable_thinking", false}}},
      {"documents", json::array({{{"title", "t"}, {"text", "d"}}})},
      {"tokens", {1, 2, 3}},
      {"return_token_strs", true},
      {"top_logprobs", 0},  // alone (without logprobs: true) only 0 is valid
      {"echo", true},
      {"logit_bias", {{"1", 5}}},
      {"tools", json::array({{{"type", "function"},
                              {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}})},
      {"tool_choice", "auto"},
      {"separate_reasoning", false},
      // issue 21: structured output (one constraint per request)
      {"response_format", {{"type", "json_object"}}},
      {"regex", "[a-z]+"},
      {"ebnf", "root ::= \"a\" | \"b\""},
      {"json_schema", R"({"type": "object"})"},  // sglang sends the schema as a string of JSON
      {"guided_json", {{"type", "object"}}},
      {"guided_regex", "[0-9]+"},
      {"guided_choice", {"yes", "no"}},
      {"guided_grammar", "root ::= \"a\""},
      {"structured_outputs", {{"choice", {"yes", "no"}}}},
  };
  if (name == "logprobs") return e == k_chat ? json(true) : json(2);  // chat a boolean, completions top-k
  if (name == "prompt") return e == k_tokenize ? json("y") : json({"y", "z"});
  if (name == "messages") return {{{"role", "user"}, {"content", "y"}}};
  auto it = values.find(name);
  return it == values.end() ? json() : it->second;
}

// The ApiError `body` raises on route `e` (status 0 when accepted). The
// generation routes run the whole parser; the tokenizer routes need a model
// for the rest, so their walk checks the table's gate alone (their full
// handling is tested over HTTP in server_tokenize_test).
ApiError error_of(const json& body, Endpoint e) {
  try {
    if (e == k_completions || e == k_chat)
      parse_api_request(body.dump(), e == k_chat ? ApiKind::chat : ApiKind::completion);
    else
      check_request_fields(body, e);
  } catch (const ApiError& err) {
    return err;
  }
  return ApiError(0, "accepted");
}

TEST(RequestFields, EveryRowGetsItsStatusOnEveryRouteItLists) {
  int n_checked = 0;
  for (const RequestField& f : request_fields()) {
    for (Endpoint e : k_endpoints) {
      if (!(f.endpoints & e)) continue;
      const std::string where = std::string(f.name) + " on " + endpoint_path(e);
      json body = base_body(e);
      if (f.status == FieldStatus::honoured) {
        const json v = honoured_value(f.name, e);
        ASSERT_FALSE(v.is_null()) << where << ": honoured, but the test has no valid value for it";
        body[f.name] = v;
        const ApiError err = error_of(body, e);
        EXPECT_EQ(err.status(), 0) << where << ": " << err.what();
      } else if (f.status == FieldStatus::harmless) {
        body[f.name] = "anything";
        const ApiError err = error_of(body, e);
        EXPECT_EQ(err.status(), 0) << where << ": " << err.what();
      } else {
        // A value that asks for something: refused, naming the field and what is missing.
        body[f.name] = "asks-for-something";
        const ApiError err = error_of(body, e);
        EXPECT_EQ(err.status(), 400) << where;
        EXPECT_EQ(err.param(), f.name) << where;
        EXPECT_NE(std::string(err.what()).find(f.name), std::string::npos) << where << ": " << err.what();
        EXPECT_NE(std::string(err.what()).find(f.reason), std::string::npos) << where << ": " << err.what();
        // The values that ask for nothing, and null, are accepted as if absent.
        if (f.neutral_values)
          for (const json& v : json::parse(f.neutral_values)) {
            body[f.name] = v;
            EXPECT_EQ(error_of(body, e).status(), 0) << where << " = " << v.dump();
          }
        body[f.name] = nullptr;
        EXPECT_EQ(error_of(body, e).status(), 0) << where << " = null";
      }
      ++n_checked;
    }
  }
  EXPECT_GT(n_checked, 150);
}

TEST(RequestFields, EveryRowSaysWhy) {
  for (const RequestField& f : request_fields()) {
    EXPECT_NE(f.endpoints, 0) << f.name;
    EXPECT_GT(std::string(f.reason).size(), 3u) << f.name;
    EXPECT_GT(std::string(f.origin).size(), 3u) << f.name;
    if (f.neutral_values) {
      EXPECT_TRUE(f.status == FieldStatus::refused || f.status == FieldStatus::refused_until_implemented) << f.name;
      EXPECT_TRUE(json::parse(f.neutral_values).is_array()) << f.name;
    }
  }
}

TEST(RequestFields, OneRowPerFieldAndRoute) {
  std::set<std::pair<std::string, int>> seen;
  for (const RequestField& f : request_fields())
    for (Endpoint e : k_endpoints)
      if (f.endpoints & e) EXPECT_TRUE(seen.insert({f.name, int(e)}).second) << f.name << " twice on " << endpoint_path(e);
}

TEST(RequestFields, UnknownFieldsAre400NamingThem) {
  for (Endpoint e : k_endpoints) {
    for (const char* name : {"temprature", "x", "frobnicate", "extra_body"}) {
      json body = base_body(e);
      body[name] = 1;
      const ApiError err = error_of(body, e);
      EXPECT_EQ(err.status(), 400) << name << " on " << endpoint_path(e);
      EXPECT_EQ(err.param(), name);
      EXPECT_NE(std::string(err.what()).find(std::string("'") + name + "'"), std::string::npos) << err.what();
    }
    // Even null: an unknown name is a client bug (a typo), not a value.
    json body = base_body(e);
    body["temprature"] = nullptr;
    EXPECT_EQ(error_of(body, e).status(), 400);
  }
}

TEST(RequestFields, AFieldOfAnotherRouteNamesTheRoute) {
  json body = base_body(k_completions);
  body["max_completion_tokens"] = 5;
  ApiError err = error_of(body, k_completions);
  EXPECT_EQ(err.status(), 400);
  EXPECT_EQ(err.param(), "max_completion_tokens");
  EXPECT_NE(std::string(err.what()).find("/v1/chat/completions"), std::string::npos) << err.what();

  body = base_body(k_chat);
  body["prompt"] = "x";
  err = error_of(body, k_chat);
  EXPECT_EQ(err.param(), "prompt");
  EXPECT_NE(std::string(err.what()).find("/v1/completions"), std::string::npos) << err.what();
}

// The rows issue 20's logprobs and tools work flipped are honoured: the table
// lets them through and their readers (logprob_request.cpp, tool_request.cpp)
// still refuse bad values, naming the field. Structured output (issue 21) is
// honoured too; its reader's 400s are structured_output_request_test's.
TEST(RequestFields, LandedWorkIsHonouredAndItsReadersStillValidate) {
  for (const char* name : {"logprobs", "top_logprobs", "logit_bias", "tools", "tool_choice", "separate_reasoning"}) {
    const RequestField* f = find_request_field(name, k_chat);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->status, FieldStatus::honoured) << name;
    EXPECT_EQ(f->neutral_values, nullptr) << name;
  }
  const RequestField* echo = find_request_field("echo", k_completions);
  ASSERT_NE(echo, nullptr);
  EXPECT_EQ(echo->status, FieldStatus::honoured);
  // echo means something else on chat (vLLM's): a row of its own, still refused.
  const RequestField* chat_echo = find_request_field("echo", k_chat);
  ASSERT_NE(chat_echo, nullptr);
  EXPECT_NE(chat_echo, echo);
  EXPECT_EQ(chat_echo->status, FieldStatus::refused);
  json ce = base_body(k_chat);
  ce["echo"] = true;
  EXPECT_EQ(error_of(ce, k_chat).param(), "echo");
  // tools and tool_choice are chat's (and /tokenize's): on completions they are no field at all.
  EXPECT_EQ(find_request_field("tools", k_completions), nullptr);
  EXPECT_EQ(find_request_field("tool_choice", k_completions), nullptr);
  EXPECT_EQ(find_request_field("tool_choice", k_tokenize), nullptr);
  EXPECT_NE(find_request_field("tools", k_tokenize), nullptr);
  for (const char* name : {"tools", "tool_choice"}) {
    json c = base_body(k_completions);
    c[name] = json::array();
    const ApiError err = error_of(c, k_completions);
    EXPECT_EQ(err.status(), 400) << name;
    EXPECT_EQ(err.param(), name);
    EXPECT_NE(std::string(err.what()).find("/v1/chat/completions"), std::string::npos) << err.what();
  }

  // Bad values: the readers' 400s, naming the field.
  struct Case {
    Endpoint e;
    const char* name;
    json value;
    const char* param;
  };
  for (const Case& c : std::vector<Case>{
           {k_chat, "tool_choice", "required", "tool_choice"},
           {k_chat, "tool_choice", "sometimes", "tool_choice"},
           {k_chat, "separate_reasoning", 1, "separate_reasoning"},
           {k_chat, "tools", json::array({json::object()}), "tools[0].type"},
           {k_chat, "logprobs", 1, "logprobs"},
           {k_chat, "top_logprobs", 21, "top_logprobs"},
           {k_completions, "logprobs", 21, "logprobs"},
           {k_completions, "logprobs", true, "logprobs"},
           {k_completions, "echo", "yes", "echo"},
           {k_completions, "logit_bias", {{"1", 500}}, "logit_bias"},
       }) {
    json body = base_body(c.e);
    body[c.name] = c.value;
    const ApiError err = error_of(body, c.e);
    EXPECT_EQ(err.status(), 400) << c.name << " = " << c.value.dump();
    EXPECT_EQ(err.param(), c.param) << c.name << " = " << c.value.dump();
  }

  json body = base_body(k_chat);
  body["tool_choice"] = "auto";
  body["response_format"] = {{"type", "text"}};
  body["logprobs"] = false;
  body["top_logprobs"] = 0;
  body["tools"] = json::array();
  EXPECT_EQ(error_of(body, k_chat).status(), 0) << error_of(body, k_chat).what();
  body["response_format"] = {{"type", "json_object"}};
  EXPECT_EQ(error_of(body, k_chat).status(), 0) << error_of(body, k_chat).what();
  body["response_format"] = {{"type", "json_schema"}};  // without its json_schema member
  EXPECT_EQ(error_of(body, k_chat).param(), "response_format.json_schema");
  for (const char* name : {"response_format", "regex", "ebnf", "json_schema", "guided_json", "guided_regex",
                           "guided_choice", "guided_grammar", "structured_outputs"})
    for (Endpoint e : {k_completions, k_chat}) {
      ASSERT_NE(find_request_field(name, e), nullptr) << name;
      EXPECT_EQ(find_request_field(name, e)->status, FieldStatus::honoured) << name;
    }
  // A completions logprobs integer asks for logprobs (0: the sampled token's), and gets them.
  json c = base_body(k_completions);
  c["logprobs"] = 0;
  EXPECT_EQ(error_of(c, k_completions).status(), 0);
  EXPECT_EQ(parse_api_request(c.dump(), ApiKind::completion).params.logprobs, 0);
}

TEST(RequestFields, HonouredChatInputFieldsReachTheRequest) {
  json body = base_body(k_chat);
  body["add_generation_prompt"] = false;
  body["add_special_tokens"] = true;
  ApiRequest r = parse_api_request(body.dump(), ApiKind::chat);
  EXPECT_FALSE(r.add_generation_prompt);
  EXPECT_EQ(r.add_special_tokens, std::optional<bool>(true));
  r = parse_api_request(base_body(k_chat).dump(), ApiKind::chat);
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_FALSE(r.add_special_tokens.has_value());
  body = base_body(k_chat);
  body["continue_final_message"] = true;  // add_generation_prompt then defaults to false
  r = parse_api_request(body.dump(), ApiKind::chat);
  EXPECT_TRUE(r.continue_final_message);
  EXPECT_FALSE(r.add_generation_prompt);
  body["add_generation_prompt"] = true;
  EXPECT_EQ(error_of(body, k_chat).param(), "continue_final_message");
  json c = base_body(k_completions);
  c["add_special_tokens"] = "no";
  EXPECT_EQ(error_of(c, k_completions).param(), "add_special_tokens");
}

}  // namespace
}  // namespace seam
