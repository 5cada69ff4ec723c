// tokenizer.json files trained and encoded by Hugging Face tokenizers 0.23
// (tools/make_tokenizer_refs.py, run on the GPU machine): Qwen2's pattern with
// NFC, GPT-2's ByteLevel regex with add_prefix_space and lstrip/single_word
// tokens, Llama-3's pattern with ignore_merges. Every string's ids (with and
// without special tokens) and decoded text, and random id sequences' decoded
// text, must be identical to HF's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace seam {
namespace {

using nlohmann::json;

std::string data_dir(const std::string& name) {
  return std::string(SEAM_SOURCE_DIR) + "/tests/data/tokenizers/" + name;
}

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, EveryCaseMatches) {
  const std::string dir = data_dir(GetParam());
  auto tok = load_tokenizer(dir);
  const json ref = json::parse(test::read_file(dir + "/cases.json"));
  const json& cases = ref.at("cases");
  ASSERT_GT(cases.size(), 2000u);
  size_t n_bad = 0;
  for (const json& c : cases) {
    const std::string text = c.at("text");
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    const auto ids_special = c.at("ids_with_special").get<std::vector<int32_t>>();
    const auto got = tok->encode(text, false);
    const auto got_special = tok->encode(text, true);
    const std::string decoded = tok->decode(ids, false);
    const std::string decoded_skip = tok->decode(ids_special, true);
    const bool ok = got == ids && got_special == ids_special && decoded == c.at("decoded").get<std::string>() &&
                    decoded_skip == c.at("decoded_skip").get<std::string>();
    if (!ok && ++n_bad <= 10) {
      ADD_FAILURE() << GetParam() << ": mismatch for text " << json(text).dump() << "\n  want ids " << json(ids).dump()
                    << "\n  got  ids " << json(got).dump() << "\n  want special " << json(ids_special).dump()
                    << "\n  got  special " << json(got_special).dump() << "\n  want decoded "
                    << c.at("decoded").dump() << "\n  got  decoded " << json(decoded).dump();
    }
  }
  EXPECT_EQ(n_bad, 0u) << "of " << cases.size() << " cases";
}

TEST_P(HfReference, RandomIdsDecodeLikeHf) {
  const std::string dir = data_dir(GetParam());
  auto tok = load_tokenizer(dir);
  const json ref = json::parse(test::read_file(dir + "/cases.json"));
  const json& cases = ref.at("decode_cases");
  ASSERT_GT(cases.size(), 100u);
  for (const json& c : cases) {
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    EXPECT_EQ(tok->decode(ids, false), c.at("text").get<std::string>()) << json(ids).dump();
    EXPECT_EQ(tok->decode(ids, true), c.at("text_skip").get<std::string>()) << json(ids).dump();
  }
}

// Streaming the reference ids gives decode(ids) exactly, one delta at a time,
// and no delta ever ends inside a UTF-8 character.
TEST_P(HfReference, IncrementalDecodingMatchesDecode) {
  const std::string dir = data_dir(GetParam());
  auto tok = load_tokenizer(dir);
  const json ref = json::parse(test::read_file(dir + "/cases.json"));
  for (const json& c : ref.at("cases")) {
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    IncrementalDetokenizer detok(*tok, false);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string delta = detok.feed(id);
      // A delta is whole characters: valid UTF-8 on its own.
      EXPECT_EQ(utf8::find_invalid(delta), std::string::npos) << json(c.at("text")).dump();
      streamed += delta;
    }
    streamed += detok.flush();
    EXPECT_EQ(streamed, tok->decode(ids, false)) << json(c.at("text")).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfReference,
                         ::testing::Values("qwen2-style", "gpt2-style", "llama3-ignore-merges"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace seam
