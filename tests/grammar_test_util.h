// Helpers of the grammar tests: the two test vocabularies, a sampler that
// walks a matcher by drawing from each step's mask, a brute-force mask (every
// token fed to a copy of the matcher) and a PCRE2 matcher.
#pragma once
#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <pcre2.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace seam::grammar::test {

struct TestVocab {
  std::string name;
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const TokenVocabulary> vocab;
};

// "stories260K" (SentencePiece, byte fallback, 512 ids) and "llama3-style"
// (byte-level BPE, 4000 ids; it names no EOS, so <|end_of_text|> stops).
inline const TestVocab& test_vocab(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TestVocab>> cache;
  auto& slot = cache[name];
  if (!slot) {
    slot = std::make_unique<TestVocab>();
    slot->name = name;
    const std::string dir =
        name == "stories260K" ? seam::test::stories_dir() : seam::test::shared_dir() + "/tokenizers/llama3-style";
    slot->tokenizer = load_tokenizer(dir);
    std::vector<int32_t> stops;
    if (slot->tokenizer->eos_id() < 0) stops.push_back(slot->tokenizer->token_to_id("<|end_of_text|>"));
    slot->vocab = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(*slot->tokenizer, stops));
  }
  return *slot;
}

inline std::vector<int32_t> allowed_ids(const uint32_t* words, int vocab_size) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < vocab_size; ++i)
    if (test_bit(words, i)) ids.push_back(i);
  return ids;
}

// The mask by definition: token t is allowed iff the matcher accepts it (each
// accepted token is rolled back on a copy before the next is tried).
inline std::vector<uint32_t> brute_force_mask(const GrammarMatcher& m) {
  const TokenVocabulary& v = m.grammar().vocab();
  std::vector<uint32_t> words(static_cast<size_t>(v.n_words()), 0);
  GrammarMatcher copy(m);
  const int n_steps = copy.n_steps();
  for (int32_t id = 0; id < v.vocab_size(); ++id) {
    if (!copy.accept_token(id)) continue;
    set_bit(words.data(), id);
    EXPECT_TRUE(copy.rollback(1));
    EXPECT_EQ(copy.n_steps(), n_steps);
  }
  return words;
}

struct Sample {
  std::string text;  // the bytes of the accepted tokens (stop tokens excluded)
  bool terminated = false;
  int n_steps = 0;
  int n_mask_mismatches = 0;  // steps whose mask differed from the brute force
};

// Draws tokens uniformly from each step's mask (taking a stop id one time in
// eight where one is allowed). After `n_free` steps it prefers
// tokens that close things (a stop id, then tokens made of '"', '}' and ']'),
// else half the time a one-byte token, so that most samples end. Every drawn
// token is in the mask and must be accepted. The first n_brute steps also
// compare the mask with brute_force_mask.
inline Sample sample(std::shared_ptr<const CompiledGrammar> g, std::mt19937& rng, int max_steps = 600, int n_free = 40,
                     int n_brute = 0) {
  GrammarMatcher m(std::move(g));
  const TokenVocabulary& v = m.grammar().vocab();
  std::vector<uint32_t> words(static_cast<size_t>(m.n_words()));
  Sample s;
  for (; s.n_steps < max_steps && !m.is_terminated(); ++s.n_steps) {
    m.fill_next_token_bitmask(words.data());
    if (s.n_steps < n_brute && brute_force_mask(m) != words) ++s.n_mask_mismatches;
    const std::vector<int32_t> ids = allowed_ids(words.data(), v.vocab_size());
    EXPECT_FALSE(ids.empty()) << "no token allowed after '" << s.text << "'";
    if (ids.empty()) break;
    std::vector<int32_t> stops, closers, short_ids;
    for (int32_t id : ids) {
      const std::string& b = v.bytes(id);
      if (v.is_stop(id))
        stops.push_back(id);
      else if (b.find_first_not_of("\"}]") == std::string::npos)
        closers.push_back(id);
      if (!v.is_stop(id) && b.size() == 1) short_ids.push_back(id);
    }
    const std::vector<int32_t>* pool = &ids;
    if (!stops.empty() && rng() % 8 == 0) pool = &stops;  // end now and then where the grammar may
    if (s.n_steps >= n_free) {
      if (!stops.empty())
        pool = &stops;
      else if (!closers.empty() && rng() % 2 == 0)
        pool = &closers;
      else if (!short_ids.empty() && rng() % 2 == 0)
        pool = &short_ids;
    }
    const int32_t id = (*pool)[rng() % pool->size()];
    EXPECT_TRUE(m.accept_token(id)) << "token " << id << " was in the mask but rejected";
    if (!v.is_stop(id)) s.text += v.bytes(id);
  }
  s.terminated = m.is_terminated();
  return s;
}

// PCRE2 full match of `text` against `pattern` (UTF mode).
inline bool pcre2_full_match(const std::string& pattern, const std::string& text, bool full = true) {
  int err;
  PCRE2_SIZE off;
  pcre2_code* re =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF, &err, &off, nullptr);
  if (re == nullptr) {
    ADD_FAILURE() << "PCRE2 cannot compile " << pattern;
    return false;
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  const int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             full ? (PCRE2_ANCHORED | PCRE2_ENDANCHORED) : 0, md, nullptr);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return rc >= 0;
}

}  // namespace seam::grammar::test
