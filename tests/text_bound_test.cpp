// The prompt-length bound of issue 26: a tokenizer's bytes-per-id bound must
// never be wrong (min_ids(text) <= the real id count, on adversarial texts
// too), pipelines that can drop text get no bound, and encode_at_most refuses
// a 60 MB text at once and stops tokenizing at the limit otherwise.
#include "tokenizer/text_bound.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/sentencepiece_spec.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_normalization.h"
#include "tokenizer/utf8.h"

namespace seam {
namespace {

using nlohmann::json;

std::string data_dir(const std::string& name) {
  return std::string(SEAM_SOURCE_DIR) + "/tests/data/tokenizers/" + name;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Texts that make a token stand for as many bytes as possible: the longest
// decoded tokens repeated, whitespace runs, invalid-for-the-vocabulary
// characters, and random mixes.
std::vector<std::string> adversarial_texts(const Tokenizer& tok) {
  std::vector<std::pair<size_t, std::string>> longest;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string t = tok.decode({id}, true);
    if (!t.empty() && utf8::find_invalid(t) == std::string::npos) longest.emplace_back(t.size(), t);
  }
  std::sort(longest.rbegin(), longest.rend());
  std::vector<std::string> texts;
  for (size_t i = 0; i < std::min<size_t>(longest.size(), 20); ++i) {
    std::string r;
    for (int k = 0; k < 30; ++k) r += longest[i].second;
    texts.push_back(r);
    texts.push_back(longest[i].second);
  }
  texts.push_back(std::string(5000, ' '));
  texts.push_back("a" + std::string(5000, ' ') + "b");
  texts.push_back(std::string(3000, '\n'));
  texts.push_back("\t \n \r" + std::string(100, '-') + std::string(100, '='));
  texts.push_back(
      "中文 😀 \xE2\x84\xAA \xEF\xBC\xA1 \xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");  // Kelvin, fullwidth A, LVT jamo
  std::mt19937 rng(7);
  const std::vector<std::string> atoms = {" ",         "  ", "a", "the",  "\n",  "é",
                                          "e\xCC\x81", "中", "😀", "1234", "<s>", "'s"};
  for (int n = 0; n < 200; ++n) {
    std::string r;
    const int len = 1 + int(rng() % 300);
    for (int k = 0; k < len; ++k) r += atoms[rng() % atoms.size()];
    texts.push_back(r);
  }
  return texts;
}

void expect_bound_holds(const std::string& dir) {
  auto tok = load_tokenizer(dir);
  ASSERT_GT(tok->max_bytes_per_token() + tok->min_ids(std::string(1000, 'x')), 0u) << dir << ": expected a bound";
  for (const std::string& text : adversarial_texts(*tok)) {
    const size_t n = tok->encode(text, false).size();
    ASSERT_LE(tok->min_ids(text), n) << dir << ": the bound overstates the ids of '" << text.substr(0, 80) << "'";
    // encode_at_most agrees with encode exactly at the limit.
    if (n > 0) {
      const auto exact = tok->encode_at_most(text, false, n);
      ASSERT_TRUE(exact.has_value()) << text.substr(0, 80);
      EXPECT_EQ(*exact, tok->encode(text, false));
      EXPECT_FALSE(tok->encode_at_most(text, false, n - 1).has_value()) << text.substr(0, 80);
    }
  }
}

TEST(TextBound, NeverOverstatesOnAdversarialTexts) {
  expect_bound_holds(test::stories_dir());                              // SentencePiece, collapses spaces
  expect_bound_holds(test::shared_dir() + "/tokenizers/llama3-style");  // byte-level BPE
  expect_bound_holds(data_dir("qwen2-style"));                          // NFC normalizer
}

TEST(TextBound, SixtyMegabytePromptIsRefusedAtOnce) {
  const std::string huge(60u << 20, 'a');
  std::string words;
  for (int i = 0; i < (60 << 20) / 8; ++i) words += "a word! ";
  for (const std::string dir : {test::stories_dir(), test::shared_dir() + "/tokenizers/llama3-style"}) {
    auto tok = load_tokenizer(dir);
    for (const std::string* text : std::vector<const std::string*>{&huge, &words}) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_FALSE(tok->encode_at_most(*text, true, 511).has_value()) << dir;
      EXPECT_LT(seconds_since(t0), 1.0) << dir;  // a length check, not a tokenization (that takes minutes)
    }
  }
}

TEST(TextBound, UnboundedPipelineStillStopsAtTheLimit) {
  // gpt2-style has '<mask>' with lstrip: it swallows any whitespace run, so no bound.
  auto tok = load_tokenizer(data_dir("gpt2-style"));
  EXPECT_EQ(tok->max_bytes_per_token(), 0u);
  std::string words;
  for (int i = 0; i < (16 << 20) / 12; ++i) words += "hello world ";
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tok->encode_limited(words, false, 100);
  EXPECT_GT(ids.size(), 100u);
  EXPECT_LT(ids.size(), 110u);  // stopped at the first pre-token past the limit
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_FALSE(tok->encode_at_most(words, false, 100).has_value());
  const std::string small = "hello world";
  EXPECT_EQ(tok->encode_at_most(small, false, 100).value(), tok->encode(small, false));
}

TEST(TextBound, StagesThatDropTextHaveNoBound) {
  EXPECT_EQ(text_bound::normalizer_shrink(json()), 1u);
  EXPECT_EQ(text_bound::normalizer_shrink(json{{"type", "Strip"}}), 0u);
  EXPECT_EQ(text_bound::normalizer_shrink(json{{"type", "NFC"}}), 4u);
  EXPECT_EQ(text_bound::normalizer_shrink(
                json{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}),
            1u);
  EXPECT_EQ(
      text_bound::normalizer_shrink(json{{"type", "Replace"}, {"pattern", {{"String", "abc"}}}, {"content", "x"}}), 3u);
  EXPECT_EQ(text_bound::normalizer_shrink(json{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", ""}}),
            0u);
  EXPECT_EQ(text_bound::normalizer_shrink(json{{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}}),
            0u);
  EXPECT_EQ(text_bound::normalizer_shrink(
                json{{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Strip"}}}}}),
            0u);
  EXPECT_TRUE(text_bound::pre_tokenizer_keeps_text(json{{"type", "ByteLevel"}}));
  EXPECT_FALSE(text_bound::pre_tokenizer_keeps_text(json{{"type", "WhitespaceSplit"}}));
  EXPECT_FALSE(text_bound::pre_tokenizer_keeps_text(
      json{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}}));
  AddedToken stripping;
  stripping.content = "<mask>";
  stripping.lstrip = true;
  EXPECT_EQ(text_bound::added_tokens_bound({stripping}), 0u);
  EXPECT_EQ(text_bound::count_non_space_bytes(" a\t\nb \x01"), 2u);
}

json small_bpe(bool unk, bool fuse_unk) {
  json model = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"<unk>", 3}}}, {"merges", {"a b"}}};
  if (unk) model["unk_token"] = "<unk>";
  model["fuse_unk"] = fuse_unk;
  return json{{"model", model}};
}

TEST(TextBound, FusedOrDroppedUnknownsHaveNoBound) {
  auto load = [](const json& j) {
    const std::string dir = test::make_temp_dir("text_bound");
    test::write_file(dir + "/tokenizer.json", j.dump());
    return load_tokenizer(dir);
  };
  auto fused = load(small_bpe(true, true));
  EXPECT_EQ(fused->max_bytes_per_token(), 0u);
  EXPECT_EQ(fused->encode("zzzzzzzzzz", false).size(), 1u);  // why: one unk for any run
  auto dropped = load(small_bpe(false, false));
  EXPECT_EQ(dropped->max_bytes_per_token(), 0u);
  EXPECT_EQ(dropped->encode("zzzzzzzzzz", false).size(), 0u);
  auto unfused = load(small_bpe(true, false));
  EXPECT_EQ(unfused->max_bytes_per_token(), 5u);  // '<unk>' is the longest string; an unk covers one character
  const std::string text = "zzzzzzzzzz\xF0\x9F\x98\x80" "ab";
  EXPECT_LE(unfused->min_ids(text), unfused->encode(text, false).size());
}

// NFC / NFD shrink text by at most 3x per code point and per canonical
// decomposition (text_bound.cpp assumes 4).
TEST(TextBound, UnicodeNormalizationShrinksAtMostThreefold) {
  size_t worst_num = 1, worst_den = 1;
  for (char32_t cp = 1; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    std::string s;
    utf8::append(s, cp);
    for (const std::string& in : {s, unicode::nfd(s)}) {
      for (const std::string& out : {unicode::nfc(in), unicode::nfd(in)}) {
        ASSERT_FALSE(out.empty());
        ASSERT_LE(in.size(), 3 * out.size()) << "U+" << std::hex << uint32_t(cp);
        if (in.size() * worst_den > worst_num * out.size()) worst_num = in.size(), worst_den = out.size();
      }
    }
  }
  EXPECT_EQ(worst_num, 3 * worst_den);  // U+212A KELVIN SIGN -> 'K' reaches it
}

TEST(TextBound, SentencePieceSpecIsReadFromTheModel) {
  std::ifstream in(test::stories_dir() + "/tokenizer.model", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const SentencePieceSpec spec = read_sentencepiece_spec(bytes);
  EXPECT_EQ(spec.model_type, 2);  // BPE
  EXPECT_TRUE(spec.byte_fallback);
  EXPECT_TRUE(spec.identity_normalizer);
  EXPECT_TRUE(spec.remove_extra_whitespaces);  // not in the file: protobuf's default
  // Truncations of a well-formed model are refused, never read past the end.
  for (size_t n : {size_t(1), size_t(2), size_t(7), bytes.size() / 2}) {
    try {
      (void)read_sentencepiece_spec(std::string_view(bytes).substr(0, n));
    } catch (const Error&) {
    }
  }
  EXPECT_THROW(read_sentencepiece_spec("\x12\xff\xff\xff\xff\x0f"), Error);
}

}  // namespace
}  // namespace seam
