// SentencePiece tokenizer (stories260K's tokenizer.model + tokenizer_config.json)
// against the golden greedy file: prompt ids exactly, decoded text exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

using nlohmann::json;

std::vector<int32_t> ids_of(const json& a) { return a.get<std::vector<int32_t>>(); }

json golden_cases() {
  const json golden = json::parse(test::read_file(test::shared_dir() + "/golden/stories260K_greedy.json"));
  return golden.at("cases");
}

TEST(SentencePieceTokenizer, LoadsStoriesFolder) {
  auto tok = load_tokenizer(test::stories_dir());
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->is_special(1));
  EXPECT_TRUE(tok->is_special(2));
  EXPECT_FALSE(tok->is_special(410));
  EXPECT_EQ(tok->token_to_id("<s>"), 1);
  EXPECT_EQ(tok->token_to_id("\xE2\x96\x81"), 410);  // "▁" alone
  EXPECT_EQ(tok->token_to_id("no such piece"), -1);
}

TEST(SentencePieceTokenizer, EveryGoldenPromptEncodesToItsIds) {
  auto tok = load_tokenizer(test::stories_dir());
  const json cases = golden_cases();
  ASSERT_GT(cases.size(), 10u);
  for (const json& c : cases) {
    const std::string prompt = c.at("prompt");
    const std::vector<int32_t> want = ids_of(c.at("prompt_ids"));
    EXPECT_EQ(tok->encode(prompt, true), want) << "prompt: " << prompt;
    // Without special tokens: the same ids minus the BOS.
    EXPECT_EQ(tok->encode(prompt, false), std::vector<int32_t>(want.begin() + 1, want.end())) << prompt;
  }
}

// The golden "generated_text" is the text the generation adds to the
// prompt's text: decode(prompt + generated) minus decode(prompt). For a
// SentencePiece decode that differs from decode(generated alone) exactly
// when the first generated piece starts with '▁' after a non-empty prompt
// (the stand-alone decode drops that space as a dummy prefix).
TEST(SentencePieceTokenizer, GoldenFullTextAndGeneratedText) {
  auto tok = load_tokenizer(test::stories_dir());
  for (const json& c : golden_cases()) {
    const std::vector<int32_t> prompt = ids_of(c.at("prompt_ids"));
    const std::vector<int32_t> generated = ids_of(c.at("generated_ids"));
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), generated.begin(), generated.end());
    const std::string full = tok->decode(all, true);
    EXPECT_EQ(full, c.at("full_text").get<std::string>()) << c.at("id");
    const std::string prompt_text = tok->decode(prompt, true);
    ASSERT_EQ(full.compare(0, prompt_text.size(), prompt_text), 0) << c.at("id");
    EXPECT_EQ(full.substr(prompt_text.size()), c.at("generated_text").get<std::string>()) << c.at("id");

    // Streaming with the prompt as context gives the generated text exactly.
    IncrementalDetokenizer detok(*tok, true, prompt);
    std::string streamed;
    for (int32_t id : generated) streamed += detok.feed(id);
    streamed += detok.flush();
    EXPECT_EQ(streamed, c.at("generated_text").get<std::string>()) << c.at("id");

    // decode(generated alone) is the same text up to the dummy-prefix space.
    std::string alone = tok->decode(generated, true);
    std::string want = c.at("generated_text");
    if (!want.empty() && want[0] == ' ') want.erase(0, 1);
    EXPECT_EQ(alone, want) << c.at("id");
  }
}

TEST(SentencePieceTokenizer, EmptyPromptIsJustBos) {
  auto tok = load_tokenizer(test::stories_dir());
  EXPECT_EQ(tok->encode("", true), std::vector<int32_t>{1});
  EXPECT_TRUE(tok->encode("", false).empty());
}

TEST(SentencePieceTokenizer, SpecialTokensInsideTextAndDecode) {
  auto tok = load_tokenizer(test::stories_dir());
  // "<s>" in the text is the BOS token, and the chunk after it gets its own dummy prefix.
  const auto ids = tok->encode("Once<s>Once", false);
  const auto once = tok->encode("Once", false);
  std::vector<int32_t> want = once;
  want.push_back(1);
  want.insert(want.end(), once.begin(), once.end());
  EXPECT_EQ(ids, want);
  EXPECT_EQ(tok->decode({1, 403, 407}, true), "Once upon");
  EXPECT_EQ(tok->decode({1, 403, 407}, false), "<s> Once upon");
}

TEST(SentencePieceTokenizer, ByteFallbackRoundTrip) {
  auto tok = load_tokenizer(test::stories_dir());
  for (const std::string text : {"Zoë had a café", "€100 — naïve 中文 😀", "tab\tand\nnewline"}) {
    const auto ids = tok->encode(text, true);
    EXPECT_EQ(tok->decode(ids, true), text);
  }
  // A lone lead byte decodes to U+FFFD, never to invalid UTF-8.
  const int32_t e2 = tok->token_to_id("<0xE2>");
  ASSERT_GE(e2, 0);
  EXPECT_EQ(tok->decode({e2}, true), "\xEF\xBF\xBD");
  EXPECT_EQ(tok->decode({e2, 403}, true), "\xEF\xBF\xBD" " Once");
}

TEST(SentencePieceTokenizer, RejectsInvalidUtf8) {
  auto tok = load_tokenizer(test::stories_dir());
  EXPECT_THROW(tok->encode(std::string("ab\xC3", 3), true), Error);
}

}  // namespace
}  // namespace seam
