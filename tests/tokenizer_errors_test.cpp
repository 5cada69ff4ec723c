// Malformed tokenizer files: each gives a seam::Error that names the file and
// the problem -- never a crash, never a silently wrong tokenizer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

using nlohmann::json;

// The message load_tokenizer(dir) throws, or "" when it does not throw.
std::string load_error(const std::string& dir) {
  try {
    load_tokenizer(dir);
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT A seam::Error: ") + e.what();
  }
  return "";
}

std::string folder_with(const std::string& file, const std::string& content) {
  const std::string dir = test::make_temp_dir("tokerr");
  test::write_file(dir + "/" + file, content);
  return dir;
}

// A small valid tokenizer.json to break one field at a time.
json valid_json() {
  json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}, {"<s>", 3}};
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", 3}, {"content", "<s>"}, {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "Isolated"}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Fuse"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b"})}}}};
}

void expect_json_error(const json& tj, const std::string& needle) {
  const std::string message = load_error(folder_with("tokenizer.json", tj.dump()));
  EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << message;
  EXPECT_EQ(message.find("NOT A seam::Error"), std::string::npos) << message;
}

TEST(TokenizerErrors, TheValidBaseLoads) {
  auto tok = load_tokenizer(folder_with("tokenizer.json", valid_json().dump()));
  EXPECT_EQ(tok->encode("ab<s>", false), (std::vector<int32_t>{2, 3}));
}

TEST(TokenizerErrors, Folders) {
  EXPECT_NE(load_error("/nonexistent/seam/dir").find("not a directory"), std::string::npos);
  EXPECT_NE(load_error(test::make_temp_dir("tokempty")).find("no tokenizer.json or tokenizer.model"),
            std::string::npos);
}

TEST(TokenizerErrors, NotJson) {
  for (const std::string bad : {"", "{", "{\"model\": ", "[1, 2]", "null", "\xFF\xFE"}) {
    const std::string message = load_error(folder_with("tokenizer.json", bad));
    EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
    EXPECT_EQ(message.find("NOT A seam::Error"), std::string::npos) << message;
    EXPECT_FALSE(message.empty()) << "accepted: " << bad;
  }
}

TEST(TokenizerErrors, Model) {
  json tj = valid_json();
  tj.erase("model");
  expect_json_error(tj, "missing field 'model'");
  tj = valid_json();
  tj["model"]["type"] = "Unigram";
  expect_json_error(tj, "unsupported model type 'Unigram'");
  tj = valid_json();
  tj["model"]["vocab"] = json::array({"a", "b"});
  expect_json_error(tj, "vocab");
  tj = valid_json();
  tj["model"]["vocab"]["c"] = "seven";
  expect_json_error(tj, "expected an integer id");
  tj = valid_json();
  tj["model"]["vocab"]["c"] = -1;
  expect_json_error(tj, "out of range");
  tj = valid_json();
  tj["model"]["vocab"]["c"] = 1;
  expect_json_error(tj, "is used by both");
  tj = valid_json();
  tj["model"]["unk_token"] = "<unk>";
  expect_json_error(tj, "unk_token");
  tj = valid_json();
  tj["model"]["dropout"] = 0.1;
  expect_json_error(tj, "dropout");
}

TEST(TokenizerErrors, Merges) {
  json tj = valid_json();
  tj["model"]["merges"] = json::array({"a b c"});
  expect_json_error(tj, "merges[0]");
  tj["model"]["merges"] = json::array({42});
  expect_json_error(tj, "merges[0]");
  tj["model"]["merges"] = json::array({json::array({"a"})});
  expect_json_error(tj, "merges[0]");
  tj["model"]["merges"] = json::array({"a b", "a z"});
  expect_json_error(tj, "\"z\" is not in the vocabulary");
  tj["model"]["merges"] = json::array({"b a"});
  expect_json_error(tj, "merged token \"ba\"");
  tj["model"].erase("merges");
  expect_json_error(tj, "merges");
}

TEST(TokenizerErrors, Components) {
  json tj = valid_json();
  tj["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_json_error(tj, "unsupported pre_tokenizer type 'Whitespace'");
  tj = valid_json();
  tj["pre_tokenizer"]["pattern"] = {{"Regex", "(unclosed"}};
  expect_json_error(tj, "cannot compile regex");
  tj = valid_json();
  tj["pre_tokenizer"].erase("pattern");
  expect_json_error(tj, "missing field 'pattern'");
  tj = valid_json();
  tj["pre_tokenizer"]["behavior"] = "Sideways";
  expect_json_error(tj, "unknown split behaviour");
  tj = valid_json();
  tj["normalizer"] = {{"type", "NFKC"}};
  expect_json_error(tj, "unsupported normalizer type 'NFKC'");
  tj = valid_json();
  tj["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}}}}};
  expect_json_error(tj, "normalizers[0]: missing field 'prepend'");
  tj = valid_json();
  tj["decoder"] = {{"type", "WordPiece"}};
  expect_json_error(tj, "unsupported decoder type 'WordPiece'");
  tj = valid_json();
  tj["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", "one"}};
  expect_json_error(tj, "start");
  tj = valid_json();
  tj["post_processor"] = {{"type", "TemplateProcessing"},
                          {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}}}},
                                                  {{"Sequence", {{"id", "A"}}}}})},
                          {"special_tokens", json::object()}};
  expect_json_error(tj, "special token \"<bos>\" is not in special_tokens");
  tj = valid_json();
  tj["pre_tokenizer"] = "Split";
  expect_json_error(tj, "expected an object");
}

TEST(TokenizerErrors, AddedTokens) {
  json tj = valid_json();
  tj["added_tokens"] = json::array({{{"id", 9}}});
  expect_json_error(tj, "added_tokens[0]: missing field 'content'");
  tj["added_tokens"] = json::array({{{"content", "<x>"}}});
  expect_json_error(tj, "added_tokens[0]: missing field 'id'");
  tj["added_tokens"] = json::array({{{"id", 9}, {"content", ""}}});
  expect_json_error(tj, "must not be empty");
  tj["added_tokens"] = json::array({{{"id", 9}, {"content", "<x>"}, {"special", "yes"}}});
  expect_json_error(tj, "special");
  tj["added_tokens"] = json::object();
  expect_json_error(tj, "added_tokens: expected an array");
}

TEST(TokenizerErrors, SentencePieceModelAndConfig) {
  std::string message = load_error(folder_with("tokenizer.model", "this is not a protobuf"));
  EXPECT_NE(message.find("tokenizer.model"), std::string::npos) << message;
  message = load_error(folder_with("tokenizer.model", ""));
  EXPECT_NE(message.find("empty"), std::string::npos) << message;

  // A good model with a broken tokenizer_config.json.
  const std::string dir = test::make_temp_dir("tokcfg");
  test::write_file(dir + "/tokenizer.model", test::read_file(test::stories_dir() + "/tokenizer.model"));
  test::write_file(dir + "/tokenizer_config.json", "{\"add_bos_token\": ");
  message = load_error(dir);
  EXPECT_NE(message.find("tokenizer_config.json"), std::string::npos) << message;
  test::write_file(dir + "/tokenizer_config.json", "{\"add_bos_token\": \"yes\"}");
  message = load_error(dir);
  EXPECT_NE(message.find("add_bos_token"), std::string::npos) << message;
  test::write_file(dir + "/tokenizer_config.json", "{\"bos_token\": \"<nope>\"}");
  message = load_error(dir);
  EXPECT_NE(message.find("<nope>"), std::string::npos) << message;
  test::write_file(dir + "/tokenizer_config.json",
                   "{\"added_tokens_decoder\": {\"x\": {\"content\": \"<s>\"}}}");
  message = load_error(dir);
  EXPECT_NE(message.find("token id"), std::string::npos) << message;
  test::write_file(dir + "/tokenizer_config.json", "{\"add_bos_token\": false}");
  auto tok = load_tokenizer(dir);
  EXPECT_EQ(tok->encode("Once", true), tok->encode("Once", false));
}

}  // namespace
}  // namespace seam
