// The matcher and its masks: the mask of many reached states equals the
// brute force over every token (both tokenizers, several grammars); stop
// tokens only where the grammar may end; special tokens never; rollback and
// copies restore the state; the vocabulary's raw token bytes.
#include "grammar/ebnf_parser.h"
#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

std::shared_ptr<const CompiledGrammar> compile_ebnf(const std::string& text, const TestVocab& tv,
                                                    bool precompute = true) {
  CompileOptions o;
  o.precompute_masks = precompute;
  return std::make_shared<const CompiledGrammar>(parse_ebnf(text), tv.vocab, o);
}

const char* kGrammars[] = {
    // Nested calls whose ends are met inside tokens (context-dependent tokens).
    R"(root ::= list
       list ::= "[" (item ("," " "? item)*)? "]"
       item ::= list | num | str
       num ::= "-"? [0-9]+
       str ::= "\"" [^"\\]* "\"")",
    // Multi-byte UTF-8 classes (byte-fallback tokens split them).
    R"(root ::= ([α-ω] | "é" | [一-龥])+ ("!" | "?"))",
    // Bounded repetitions and alternatives sharing prefixes.
    R"(root ::= ("ab" | "abc" | "a") {2,4} "." [a-c]{0,3})",
};

class MaskSuite : public ::testing::TestWithParam<const char*> {};

TEST_P(MaskSuite, MaskEqualsBruteForceAlongRandomWalks) {
  const TestVocab& tv = test_vocab(GetParam());
  std::mt19937 rng(7);
  for (const char* text : kGrammars) {
    SCOPED_TRACE(text);
    for (bool precompute : {true, false}) {
      const auto g = compile_ebnf(text, tv, precompute);
      for (int i = 0; i < 4; ++i) {
        const Sample s = sample(g, rng, 60, 30, 60);
        EXPECT_EQ(s.n_mask_mismatches, 0) << "after '" << s.text << "'";
        EXPECT_GT(s.n_steps, 0);
      }
    }
  }
}

TEST_P(MaskSuite, StopOnlyWhereTheGrammarEndsSpecialsNever) {
  const TestVocab& tv = test_vocab(GetParam());
  const auto g = compile_ebnf(R"(root ::= "a" "b"?)", tv);
  GrammarMatcher m(g);
  std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
  const std::vector<int32_t>& stops = tv.vocab->stop_ids();
  ASSERT_FALSE(stops.empty());
  m.fill_next_token_bitmask(w.data());
  for (int32_t id : stops) EXPECT_FALSE(test_bit(w.data(), id));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_token(stops[0]));
  ASSERT_TRUE(m.accept_bytes("a"));
  EXPECT_TRUE(m.can_end());
  m.fill_next_token_bitmask(w.data());
  for (int32_t id : stops) EXPECT_TRUE(test_bit(w.data(), id));
  for (int32_t id = 0; id < tv.vocab->vocab_size(); ++id)
    if (tv.tokenizer->is_special(id) && !tv.vocab->is_stop(id)) EXPECT_FALSE(test_bit(w.data(), id)) << id;
  EXPECT_TRUE(m.accept_token(stops[0]));
  EXPECT_TRUE(m.is_terminated());
  m.fill_next_token_bitmask(w.data());
  EXPECT_EQ(allowed_ids(w.data(), tv.vocab->vocab_size()).size(), 0u);
  EXPECT_FALSE(m.accept_bytes("b"));
  // Rolling back the stop token reopens the grammar.
  EXPECT_TRUE(m.rollback(1));
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_bytes("b"));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, MaskSuite, ::testing::Values("stories260K", "llama3-style"));

TEST(Matcher, RollbackAndCopyRestoreTheState) {
  const TestVocab& tv = test_vocab("llama3-style");
  const auto g = compile_ebnf(kGrammars[0], tv);
  GrammarMatcher m(g);
  const std::vector<int32_t> ids = tv.tokenizer->encode("[12, \"ab\", [-3]]", false);
  std::vector<std::vector<uint32_t>> masks;
  std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
  for (int32_t id : ids) {
    m.fill_next_token_bitmask(w.data());
    masks.push_back(w);
    ASSERT_TRUE(test_bit(w.data(), id)) << "token " << id << " '" << tv.vocab->bytes(id) << "'";
    ASSERT_TRUE(m.accept_token(id));
  }
  EXPECT_TRUE(m.can_end());
  const GrammarMatcher finished(m);
  // A retract: undo the last 3 tokens, then the same masks come back.
  ASSERT_TRUE(m.rollback(3));
  EXPECT_FALSE(m.can_end());
  for (size_t i = ids.size() - 3; i < ids.size(); ++i) {
    m.fill_next_token_bitmask(w.data());
    EXPECT_EQ(w, masks[i]) << i;
    ASSERT_TRUE(m.accept_token(ids[i]));
  }
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.rollback(static_cast<int>(ids.size()) + 1));
  ASSERT_TRUE(m.rollback(static_cast<int>(ids.size())));
  m.fill_next_token_bitmask(w.data());
  EXPECT_EQ(w, masks[0]);
  // The copy kept the finished state.
  EXPECT_TRUE(finished.can_end());
  EXPECT_EQ(finished.n_steps(), static_cast<int>(ids.size()));
  m.reset();
  EXPECT_EQ(m.n_steps(), 0);
  // A rejected token leaves the state as it was.
  const int32_t bad = tv.tokenizer->encode("}", false)[0];
  EXPECT_FALSE(m.accept_token(bad));
  EXPECT_EQ(m.n_steps(), 0);
  EXPECT_FALSE(m.accept_token(-1));
  EXPECT_FALSE(m.accept_token(tv.vocab->vocab_size()));
}

TEST(Vocabulary, RawBytesOfByteFallbackAndByteLevelTokens) {
  // stories260K: SentencePiece with <0xXX> byte pieces and '▁' spaces.
  const TestVocab& sp = test_vocab("stories260K");
  const int32_t byte_c3 = sp.tokenizer->token_to_id("<0xC3>");
  ASSERT_GE(byte_c3, 0);
  EXPECT_EQ(sp.vocab->bytes(byte_c3), "\xC3");
  const std::vector<int32_t> the = sp.tokenizer->encode("once upon", false);
  std::string joined;
  for (int32_t id : the) joined += sp.vocab->bytes(id);
  EXPECT_EQ(joined, " once upon");  // the dummy prefix is a real space mid-text
  EXPECT_FALSE(sp.vocab->in_trie(sp.tokenizer->bos_id()));
  // llama3-style: byte-level BPE, where a token may hold part of a UTF-8 sequence.
  const TestVocab& bl = test_vocab("llama3-style");
  const std::string text = "héllo wörld 😀 {\"a\": 1}";
  std::string rebuilt;
  for (int32_t id : bl.tokenizer->encode(text, false)) rebuilt += bl.vocab->bytes(id);
  EXPECT_EQ(rebuilt, text);
  int n_partial = 0;
  for (int32_t id = 0; id < bl.vocab->vocab_size(); ++id) {
    const std::string& b = bl.vocab->bytes(id);
    if (b.size() == 1 && static_cast<unsigned char>(b[0]) >= 0x80) ++n_partial;
  }
  EXPECT_GT(n_partial, 0);  // lone UTF-8 bytes exist as tokens and keep their byte
}

TEST(Vocabulary, TrieHoldsEveryOrdinaryTokenOnce) {
  const TestVocab& tv = test_vocab("llama3-style");
  const auto& trie = tv.vocab->trie();
  std::vector<int> seen(static_cast<size_t>(tv.vocab->vocab_size()), 0);
  // Walk the trie: the bytes along the path to a node are the bytes of the tokens ending there.
  std::vector<std::pair<uint32_t, std::string>> todo = {{0, ""}};
  while (!todo.empty()) {
    auto [n, prefix] = todo.back();
    todo.pop_back();
    for (uint32_t i = trie[n].tokens_begin; i < trie[n].tokens_begin + trie[n].n_here; ++i) {
      const int32_t id = tv.vocab->sorted_ids()[i];
      EXPECT_EQ(tv.vocab->bytes(id), prefix);
      ++seen[static_cast<size_t>(id)];
    }
    for (uint32_t c = trie[n].children_begin; c < trie[n].children_end; ++c)
      todo.push_back({c, prefix + static_cast<char>(trie[c].byte)});
  }
  for (int32_t id = 0; id < tv.vocab->vocab_size(); ++id)
    EXPECT_EQ(seen[static_cast<size_t>(id)], tv.vocab->in_trie(id) ? 1 : 0) << id;
}

}  // namespace
}  // namespace seam::grammar::test
