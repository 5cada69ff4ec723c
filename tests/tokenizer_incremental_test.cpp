// IncrementalDetokenizer: deltas never split a UTF-8 character, their
// concatenation is the full decode, and the re-decoded window stays small.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace seam {
namespace {

using nlohmann::json;

// Streams ids one by one; checks every delta is whole characters; returns all text.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special,
                   std::vector<std::string>* deltas = nullptr, const std::vector<int32_t>& context = {}) {
  IncrementalDetokenizer detok(tok, skip_special, context);
  std::string text;
  for (int32_t id : ids) {
    const std::string delta = detok.feed(id);
    EXPECT_EQ(utf8::find_invalid(delta), std::string::npos) << "a delta holds a partial character";
    if (deltas) deltas->push_back(delta);
    text += delta;
  }
  const std::string rest = detok.flush();
  if (deltas) deltas->push_back(rest);
  return text + rest;
}

// A tokenizer wrapper that counts how many ids decode() is given.
class CountingTokenizer : public Tokenizer {
 public:
  explicit CountingTokenizer(const Tokenizer& inner) : inner_(inner) {}
  std::vector<int32_t> encode(std::string_view t, bool s) const override { return inner_.encode(t, s); }
  std::string decode(const std::vector<int32_t>& ids, bool s) const override {
    n_decoded_ += ids.size();
    max_window_ = std::max(max_window_, ids.size());
    return inner_.decode(ids, s);
  }
  int vocab_size() const override { return inner_.vocab_size(); }
  int32_t bos_id() const override { return inner_.bos_id(); }
  int32_t eos_id() const override { return inner_.eos_id(); }
  bool is_special(int32_t id) const override { return inner_.is_special(id); }
  int32_t token_to_id(std::string_view t) const override { return inner_.token_to_id(t); }
  std::string id_to_token(int32_t id) const override { return inner_.id_to_token(id); }
  mutable size_t n_decoded_ = 0;
  mutable size_t max_window_ = 0;

 private:
  const Tokenizer& inner_;
};

TEST(IncrementalDetokenizer, ByteFallbackCharactersAreHeldUntilWhole) {
  auto tok = load_tokenizer(test::stories_dir());
  // '中' is not in stories260K's vocabulary: <0xE4> <0xB8> <0xAD>.
  const auto ids = tok->encode("a €5 and 中文 😀!", false);
  const int32_t e2 = tok->token_to_id("<0xE4>");
  ASSERT_NE(std::find(ids.begin(), ids.end(), e2), ids.end());
  std::vector<std::string> deltas;
  EXPECT_EQ(stream(*tok, ids, true, &deltas), tok->decode(ids, true));
  EXPECT_EQ(stream(*tok, ids, true), "a €5 and 中文 😀!");
  // The feeds of <0xE4> and <0xB8> gave nothing; <0xAD> gave the whole '中'.
  const size_t at = static_cast<size_t>(std::find(ids.begin(), ids.end(), e2) - ids.begin());
  EXPECT_EQ(deltas[at], "");
  EXPECT_EQ(deltas[at + 1], "");
  EXPECT_NE(deltas[at + 2].find("中"), std::string::npos);
}

TEST(IncrementalDetokenizer, UnfinishedCharacterAtTheEndComesOutOnFlush) {
  auto tok = load_tokenizer(test::stories_dir());
  const int32_t e2 = tok->token_to_id("<0xE2>"), x82 = tok->token_to_id("<0x82>");
  const std::vector<int32_t> ids = {403, e2, x82};
  std::vector<std::string> deltas;
  const std::string text = stream(*tok, ids, true, &deltas);
  EXPECT_EQ(text, tok->decode(ids, true));
  EXPECT_EQ(deltas[1], "");
  EXPECT_EQ(deltas[2], "");
  EXPECT_EQ(deltas[0], "Once");
  EXPECT_EQ(deltas.back(), "\xEF\xBF\xBD");  // flush: the replacement for the broken tail
}

TEST(IncrementalDetokenizer, GoldenGenerationsStreamExactly) {
  auto tok = load_tokenizer(test::stories_dir());
  const json cases = json::parse(test::read_file(test::shared_dir() + "/golden/stories260K_greedy.json")).at("cases");
  for (const json& c : cases) {
    const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto generated = c.at("generated_ids").get<std::vector<int32_t>>();
    EXPECT_EQ(stream(*tok, generated, true, nullptr, prompt), c.at("generated_text").get<std::string>()) << c.at("id");
  }
}

TEST(IncrementalDetokenizer, Llama3StyleCases) {
  const std::string dir = test::shared_dir() + "/tokenizers/llama3-style";
  auto tok = load_tokenizer(dir);
  const json cases = json::parse(test::read_file(dir + "/cases.json")).at("cases");
  for (const json& c : cases) {
    const auto ids = c.at("ids_with_special").get<std::vector<int32_t>>();
    EXPECT_EQ(stream(*tok, ids, false), tok->decode(ids, false)) << c.at("text");
    EXPECT_EQ(stream(*tok, ids, true), tok->decode(ids, true)) << c.at("text");
  }
  // Emoji and CJK split across byte-level tokens stream as whole characters.
  const auto ids = tok->encode("emoji 👍🏽 family 👨‍👩‍👧 中文", false);
  EXPECT_EQ(stream(*tok, ids, false), "emoji 👍🏽 family 👨‍👩‍👧 中文");
}

TEST(IncrementalDetokenizer, RandomIdsAlwaysWholeCharacters) {
  // Random byte-level ids form invalid UTF-8 all the time: every delta must
  // still be whole characters, and the total must be the full decode.
  auto tok = load_tokenizer(test::shared_dir() + "/tokenizers/llama3-style");
  uint64_t state = 7;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 30; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      ids.push_back(static_cast<int32_t>((state >> 33) % 4000));
    }
    EXPECT_EQ(stream(*tok, ids, false), tok->decode(ids, false));
  }
}

TEST(IncrementalDetokenizer, PerTokenCostIsBounded) {
  auto base = load_tokenizer(test::stories_dir());
  CountingTokenizer tok(*base);
  std::string text;
  for (int i = 0; i < 200; ++i) text += "Once upon a time there was a little girl named Lily. ";
  const auto ids = base->encode(text, false);
  ASSERT_GT(ids.size(), 2000u);
  EXPECT_EQ(stream(tok, ids, true), base->decode(ids, true));
  // Each feed decodes two small windows: nowhere near O(n^2) = n*n/2 ids.
  EXPECT_LT(tok.max_window_, 16u);
  EXPECT_LT(tok.n_decoded_, ids.size() * 8);
}

}  // namespace
}  // namespace seam
