// seam tokenize / detokenize line loops: JSON lines in, JSON lines out; bad
// lines are reported on the error stream and make the exit code non-zero.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/tokenize_command.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::json;

TEST(TokenizeCli, TokenizeLines) {
  auto tok = load_tokenizer(test::stories_dir());
  std::istringstream in(
      "{\"text\": \"Once upon a time\", \"add_special_tokens\": true}\n"
      "{\"text\": \"Once upon a time\", \"add_special_tokens\": false}\n"
      "\n"
      "{\"text\": \"\"}\n");
  std::ostringstream out, err;
  EXPECT_EQ(cli::tokenize_lines(*tok, in, out, err), 0);
  EXPECT_EQ(out.str(), "{\"ids\":[1,403,407,261,378]}\n{\"ids\":[403,407,261,378]}\n{\"ids\":[1]}\n");
  EXPECT_EQ(err.str(), "");
}

TEST(TokenizeCli, DetokenizeLines) {
  auto tok = load_tokenizer(test::shared_dir() + "/tokenizers/llama3-style");
  const auto ids = tok->encode("Hello world 👍🏽", true);
  std::istringstream in(json{{"ids", ids}}.dump() + "\n" + json{{"ids", ids}, {"skip_special_tokens", true}}.dump() +
                        "\n");
  std::ostringstream out, err;
  EXPECT_EQ(cli::detokenize_lines(*tok, in, out, err), 0);
  EXPECT_EQ(out.str(), "{\"text\":\"<|begin_of_text|>Hello world 👍🏽\"}\n{\"text\":\"Hello world 👍🏽\"}\n");
}

TEST(TokenizeCli, BadLinesAreReportedAndTheRestGoesOn) {
  auto tok = load_tokenizer(test::stories_dir());
  std::istringstream in(
      "not json\n"
      "{\"text\": 5}\n"
      "[1, 2]\n"
      "{\"text\": \"The cat\", \"add_special_tokens\": \"yes\"}\n"
      "{\"text\": \"The cat\"}\n");
  std::ostringstream out, err;
  EXPECT_EQ(cli::tokenize_lines(*tok, in, out, err), 1);
  EXPECT_EQ(out.str(), "{\"ids\":[1,291,280,294]}\n");
  const std::string e = err.str();
  for (const char* needle : {"line 1: not valid JSON", "line 2: \"text\" must be a string", "line 3: expected a JSON object",
                             "line 4: \"add_special_tokens\" must be true or false"})
    EXPECT_NE(e.find(needle), std::string::npos) << needle << " in " << e;

  std::istringstream in2("{\"ids\": [1, -3]}\n{\"ids\": \"1 2\"}\n{\"ids\": [1, 403]}\n{\"ids\": [1e30]}\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::detokenize_lines(*tok, in2, out2, err2), 1);
  EXPECT_EQ(out2.str(), "{\"text\":\"<s> Once\"}\n");
  EXPECT_NE(err2.str().find("line 1:"), std::string::npos);
  EXPECT_NE(err2.str().find("line 2:"), std::string::npos);
  EXPECT_NE(err2.str().find("line 4:"), std::string::npos);
}

}  // namespace
}  // namespace seam
