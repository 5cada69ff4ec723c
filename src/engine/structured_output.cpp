#include "engine/structured_output.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "api/error_kind.h"

namespace seam {

namespace {
grammar::ConstraintKind grammar_kind(OutputConstraint::Kind k) {
  switch (k) {
    case OutputConstraint::Kind::json_schema: return grammar::ConstraintKind::kJsonSchema;
    case OutputConstraint::Kind::json_object: return grammar::ConstraintKind::kJsonObject;
    case OutputConstraint::Kind::regex: return grammar::ConstraintKind::kRegex;
    case OutputConstraint::Kind::ebnf: return grammar::ConstraintKind::kEbnf;
    case OutputConstraint::Kind::choice: return grammar::ConstraintKind::kChoice;
  }
  throw InternalError("unknown OutputConstraint kind");
}
}  // namespace

StructuredOutput::StructuredOutput(const Tokenizer& tokenizer, const std::vector<int32_t>& eos_ids,
                                   size_t cache_bytes)
    : compiler_(std::make_unique<grammar::GrammarCompiler>(
          std::make_shared<const grammar::TokenVocabulary>(
              grammar::TokenVocabulary::from_tokenizer(tokenizer, eos_ids)),
          cache_bytes)) {}

std::shared_ptr<const grammar::CompiledGrammar> StructuredOutput::compile(const OutputConstraint& c) const {
  grammar::Constraint g;
  g.kind = grammar_kind(c.kind);
  g.text = c.text;
  g.json_options.any_whitespace = c.any_whitespace;
  g.json_options.strict_properties = c.strict_properties;
  const std::string field = c.field.empty() ? "constraint" : c.field;
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  try {
    compiled = compiler_->compile(g);
  } catch (const RequestError&) {
    throw;
  } catch (const InternalError&) {
    throw;  // a broken invariant of the compiler is a 500, not the client's fault
  } catch (const Error& e) {
    // A bad schema / regex / grammar, or a keyword the engine cannot enforce: the
    // compiler's reason, as a 400 naming the field the constraint came from.
    throw invalid_request(e.what(), field);
  } catch (const nlohmann::json::exception& e) {
    throw invalid_request(std::string("the constraint is not valid JSON: ") + e.what(), field);
  }
  compile_us_ += uint64_t(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  return compiled;
}

void StructuredOutput::fill_mask(grammar::GrammarMatcher& m, const SamplingParams& params, uint32_t* words,
                                 int n_words) {
  // The matcher's mask covers the tokenizer's ids; ids past them (a model vocabulary padded
  // beyond the tokenizer) are written clear: never allowed. Every word is written once.
  if (m.n_words() <= n_words) {
    m.fill_next_token_bitmask(words);
    std::fill(words + m.n_words(), words + n_words, 0u);
  } else {
    scratch_.resize(size_t(m.n_words()));
    m.fill_next_token_bitmask(scratch_.data());
    std::copy_n(scratch_.data(), n_words, words);
  }
  // The request's stop_token_ids end it wherever they are sampled: allowed exactly where the
  // grammar may end, like the EOS ids the vocabulary already treats so.
  const bool can_end = m.can_end();
  for (int32_t id : params.stop_token_ids) {
    if (id < 0 || id >= n_words * 32) continue;
    const uint32_t bit = 1u << (id & 31);
    words[id >> 5] = can_end ? (words[id >> 5] | bit) : (words[id >> 5] & ~bit);
  }
}

}  // namespace seam
