// tokenizer.json (Hugging Face) tokenizer: the llama3-style reference cases
// made with HF tokenizers 0.23, and unit checks of the pipeline parts
// (normalizers, pre-tokenizers, BPE options, added-token flags, decoders)
// on small tokenizer.json files written here.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_normalization.h"

namespace seam {
namespace {

using nlohmann::json;

std::string llama3_dir() { return test::shared_dir() + "/tokenizers/llama3-style"; }

TEST(HfTokenizer, Llama3StyleCasesMatchHfTokenizers) {
  auto tok = load_tokenizer(llama3_dir());
  const json cases = json::parse(test::read_file(llama3_dir() + "/cases.json")).at("cases");
  ASSERT_GE(cases.size(), 40u);
  for (const json& c : cases) {
    const std::string text = c.at("text");
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(text, false), ids) << "text: " << text;
    EXPECT_EQ(tok->encode(text, true), c.at("ids_with_special").get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok->decode(ids, false), c.at("decoded").get<std::string>()) << text;
  }
}

TEST(HfTokenizer, Llama3StyleBasics) {
  auto tok = load_tokenizer(llama3_dir());
  EXPECT_EQ(tok->vocab_size(), 4000);
  EXPECT_EQ(tok->bos_id(), 0);  // from the TemplateProcessing post-processor
  EXPECT_EQ(tok->eos_id(), -1);  // no tokenizer_config.json names one
  EXPECT_TRUE(tok->is_special(4));
  EXPECT_FALSE(tok->is_special(100));
  EXPECT_EQ(tok->token_to_id("<|eot_id|>"), 4);
  // skip_special_tokens drops the added special tokens only.
  const auto ids = tok->encode("<|start_header_id|>user<|end_header_id|>hi", true);
  EXPECT_EQ(tok->decode(ids, true), "userhi");
  // Unknown ids are dropped, as HF does.
  EXPECT_EQ(tok->decode({999999, -5}, false), "");
}

TEST(HfTokenizer, LongAndAdversarialInputsRoundTrip) {
  auto tok = load_tokenizer(llama3_dir());
  std::string spaces(1 << 20, ' ');
  spaces += "x";
  std::string as(1 << 20, 'a');
  std::string emoji;
  for (int i = 0; i < 50000; ++i) emoji += "👨‍👩‍👧 ";
  std::string newlines;
  for (int i = 0; i < 100000; ++i) newlines += " \r\n\t";
  for (const std::string* text : {&spaces, &as, &emoji, &newlines}) {
    const auto ids = tok->encode(*text, true);
    EXPECT_EQ(tok->decode(ids, true), *text);
  }
}

// Encoding from several threads at once (shared cache, per-thread regex
// state) gives the same ids as one thread.
TEST(HfTokenizer, ConcurrentEncodeIsConsistent) {
  auto tok = load_tokenizer(llama3_dir());
  const json cases = json::parse(test::read_file(llama3_dir() + "/cases.json")).at("cases");
  std::vector<std::thread> threads;
  std::atomic<int> n_bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&]() {
      for (int rep = 0; rep < 20; ++rep)
        for (const json& c : cases)
          if (tok->encode(c.at("text").get<std::string>(), false) != c.at("ids").get<std::vector<int32_t>>()) ++n_bad;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(n_bad.load(), 0);
}

// ---- small tokenizer.json files for the pipeline parts ----

// A byte-level vocabulary: the 256 byte characters plus `extra` tokens.
json byte_level_vocab(const std::vector<std::string>& extra) {
  json vocab = json::object();
  int id = 0;
  // The 256 characters of GPT-2's byte map, in byte order.
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    static int n = 0;
    if (b == 0) n = 0;
    const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    vocab[s] = id++;
  }
  for (const std::string& e : extra) vocab[e] = id++;
  return vocab;
}

std::string write_tokenizer(const json& tj, const std::string& tag) {
  const std::string dir = test::make_temp_dir(tag);
  test::write_file(dir + "/tokenizer.json", tj.dump());
  return dir;
}

json byte_level_tokenizer(const json& merges, const std::vector<std::string>& extra) {
  json tj;
  tj["version"] = "1.0";
  tj["added_tokens"] = json::array();
  tj["normalizer"] = nullptr;
  tj["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  tj["post_processor"] = nullptr;
  tj["decoder"] = {{"type", "ByteLevel"}};
  tj["model"] = {{"type", "BPE"}, {"vocab", byte_level_vocab(extra)}, {"merges", merges}};
  return tj;
}

TEST(HfTokenizer, MergesInBothFormsGiveTheSameIds) {
  const std::vector<std::string> extra = {"he", "ll", "hell", "hello", "Ġw", "Ġwo"};
  auto a = load_tokenizer(write_tokenizer(
      byte_level_tokenizer(json::array({"h e", "l l", "he ll", "hell o", "Ġ w", "Ġw o"}), extra), "merges_a"));
  auto b = load_tokenizer(write_tokenizer(
      byte_level_tokenizer(json::array({json::array({"h", "e"}), json::array({"l", "l"}), json::array({"he", "ll"}),
                                        json::array({"hell", "o"}), json::array({"Ġ", "w"}),
                                        json::array({"Ġw", "o"})}),
                           extra),
      "merges_b"));
  const auto ids = a->encode("hello world", false);
  EXPECT_EQ(ids, b->encode("hello world", false));
  // "hello" -> one token; " world" -> "Ġwo" + r, l, d.
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[0], a->token_to_id("hello"));
  EXPECT_EQ(ids[1], a->token_to_id("Ġwo"));
  EXPECT_EQ(a->decode(ids, false), "hello world");
}

TEST(HfTokenizer, MergeRankOrderDecides) {
  // "abc": with merges [b c, a b] the result is a + bc; reversed, ab + c.
  const std::vector<std::string> extra = {"ab", "bc"};
  auto bc_first = load_tokenizer(write_tokenizer(byte_level_tokenizer(json::array({"b c", "a b"}), extra), "rank1"));
  auto ab_first = load_tokenizer(write_tokenizer(byte_level_tokenizer(json::array({"a b", "b c"}), extra), "rank2"));
  // Byte-level vocabularies here give each printable ASCII byte its own value as id.
  EXPECT_EQ(bc_first->encode("abc", false), (std::vector<int32_t>{'a', bc_first->token_to_id("bc")}));
  EXPECT_EQ(ab_first->encode("abc", false), (std::vector<int32_t>{ab_first->token_to_id("ab"), 'c'}));
  // Equal pairs merge leftmost first: "aaa" -> aa + a.
  auto aa = load_tokenizer(write_tokenizer(byte_level_tokenizer(json::array({"a a"}), {"aa"}), "rank3"));
  EXPECT_EQ(aa->encode("aaa", false), (std::vector<int32_t>{aa->token_to_id("aa"), 'a'}));
}

TEST(HfTokenizer, IgnoreMergesMapsWholePreTokens) {
  // "abc" is in the vocabulary but no merge path reaches it.
  json tj = byte_level_tokenizer(json::array({"a b"}), {"ab", "abc"});
  auto plain = load_tokenizer(write_tokenizer(tj, "ignore0"));
  EXPECT_EQ(plain->encode("abc", false).size(), 2u);
  tj["model"]["ignore_merges"] = true;
  auto direct = load_tokenizer(write_tokenizer(tj, "ignore1"));
  EXPECT_EQ(direct->encode("abc", false), std::vector<int32_t>{direct->token_to_id("abc")});
}

TEST(HfTokenizer, AddedTokenFlags) {
  json tj = byte_level_tokenizer(json::array(), {});
  auto add = [&](int id, const std::string& content, bool lstrip, bool rstrip, bool single_word, bool special) {
    tj["added_tokens"].push_back({{"id", id},           {"content", content}, {"single_word", single_word},
                                  {"lstrip", lstrip},   {"rstrip", rstrip},   {"normalized", false},
                                  {"special", special}});
  };
  add(300, "<mask>", true, true, false, true);
  add(301, "[W]", false, false, true, false);
  add(302, "<a>", false, false, false, true);
  add(303, "<a><b>", false, false, false, true);
  auto tok = load_tokenizer(write_tokenizer(tj, "added"));
  // lstrip/rstrip swallow the spaces around <mask>.
  EXPECT_EQ(tok->encode("x <mask>  y", false), (std::vector<int32_t>{'x', 300, 'y'}));
  // single_word: only matched with non-word characters around it.
  EXPECT_EQ(tok->encode("[W]", false), std::vector<int32_t>{301});
  EXPECT_EQ(tok->encode("a[W]", false).size(), 4u);
  // Leftmost-longest.
  EXPECT_EQ(tok->encode("<a><b><a>", false), (std::vector<int32_t>{303, 302}));
  EXPECT_TRUE(tok->is_special(300));
  EXPECT_FALSE(tok->is_special(301));
  EXPECT_EQ(tok->decode({302, 301}, true), "[W]");
  EXPECT_EQ(tok->vocab_size(), 304);
}

TEST(HfTokenizer, SentencePieceStyleJson) {
  // Llama-2 / Mistral style: Prepend + Replace normalizer, byte_fallback BPE,
  // Replace / ByteFallback / Fuse / Strip decoder, TemplateProcessing BOS.
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  int id = 259;
  for (const char* t : {"▁", "h", "i", "▁h", "▁hi", "t", "e", "r", "▁t", "▁th", "▁the", "re", "▁there"}) vocab[t] = id++;
  json tj;
  tj["added_tokens"] = json::array();
  for (int i = 0; i < 3; ++i) {
    const char* names[] = {"<unk>", "<s>", "</s>"};
    tj["added_tokens"].push_back({{"id", i}, {"content", names[i]}, {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  tj["normalizer"] = {{"type", "Sequence"},
                      {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                                                   {{"type", "Replace"},
                                                    {"pattern", {{"String", " "}}},
                                                    {"content", "▁"}}})}};
  tj["pre_tokenizer"] = nullptr;
  tj["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", json::array()},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  tj["decoder"] = {{"type", "Sequence"},
                   {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                                             {{"type", "ByteFallback"}},
                                             {{"type", "Fuse"}},
                                             {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  tj["model"] = {{"type", "BPE"},     {"vocab", vocab},          {"unk_token", "<unk>"},
                 {"fuse_unk", true},  {"byte_fallback", true},
                 {"merges", json::array({"▁ h", "▁h i", "▁ t", "▁t h", "▁th e", "r e", "▁the re", "▁there e"})}};
  // "▁there e" names a token that is not in the vocabulary: a clear error.
  const std::string bad_dir = write_tokenizer(tj, "spjson_bad");
  EXPECT_THROW(load_tokenizer(bad_dir), Error);
  tj["model"]["merges"] = json::array({"▁ h", "▁h i", "▁ t", "▁t h", "▁th e", "r e", "▁the re"});
  auto tok = load_tokenizer(write_tokenizer(tj, "spjson"));
  const auto ids = tok->encode("hi there é", true);
  // BOS, ▁hi, ▁there, ▁, then é (not in the vocabulary) as bytes <0xC3> <0xA9>.
  EXPECT_EQ(ids, (std::vector<int32_t>{1, tok->token_to_id("▁hi"), tok->token_to_id("▁there"),
                                       tok->token_to_id("▁"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->decode(ids, true), "hi there é");
  EXPECT_EQ(tok->decode(ids, false), "<s> hi there é");
  // An invalid byte run: one U+FFFD per byte token (HF's ByteFallback).
  EXPECT_EQ(tok->decode({3 + 0xC3, 3 + 0x41}, true), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(tok->bos_id(), 1);
}

TEST(HfTokenizer, MetaspacePreTokenizerAndDecoder) {
  json vocab = {{"<s>", 0}, {"▁a", 1}, {"▁b", 2}, {"a", 3}, {"b", 4}, {"▁", 5}};
  json tj;
  tj["added_tokens"] = json::array({{{"id", 0}, {"content", "<s>"}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", true}}});
  tj["normalizer"] = nullptr;
  tj["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", true}};
  tj["decoder"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", true}};
  tj["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"▁ a", "▁ b"})}};
  auto tok = load_tokenizer(write_tokenizer(tj, "metaspace"));
  // "first": only the piece at the start of the text gets the prefix.
  EXPECT_EQ(tok->encode("a b", false), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(tok->encode("<s>a b", false), (std::vector<int32_t>{0, 3, 2}));
  EXPECT_EQ(tok->decode({1, 2}, false), "a b");
}

TEST(HfTokenizer, Nfc) {
  EXPECT_EQ(unicode::nfc("e\xCC\x81"), "\xC3\xA9");                         // e + acute -> é
  EXPECT_EQ(unicode::nfd("\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // Hangul L V T -> 각
  // Canonical ordering: dot below (220) before acute (230), then composition.
  EXPECT_EQ(unicode::nfc("e\xCC\x81\xCC\xA3"), "\xE1\xBA\xB9\xCC\x81");  // ẹ + acute
  EXPECT_EQ(unicode::nfc("plain ascii"), "plain ascii");
}

// id_to_token (convert_ids_to_tokens): every id's string maps back to the id,
// for both tokenizer kinds; ids outside the vocabulary give "".
TEST(Tokenizer, IdToTokenInvertsTokenToId) {
  for (const std::string dir : {llama3_dir(), test::stories_dir()}) {
    auto tok = load_tokenizer(dir);
    int n_named = 0;
    for (int32_t id = 0; id < tok->vocab_size(); ++id) {
      const std::string s = tok->id_to_token(id);
      if (s.empty()) continue;  // a hole in the ids
      EXPECT_EQ(tok->token_to_id(s), id) << dir << " id " << id << " '" << s << "'";
      ++n_named;
    }
    EXPECT_GT(n_named, tok->vocab_size() * 9 / 10) << dir;
    EXPECT_EQ(tok->id_to_token(tok->bos_id()).empty(), tok->bos_id() < 0) << dir;
    EXPECT_EQ(tok->id_to_token(-1), "");
    EXPECT_EQ(tok->id_to_token(tok->vocab_size()), "");
  }
}

}  // namespace
}  // namespace seam
