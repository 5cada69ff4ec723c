#include "grammar/grammar_compiler.h"

#include "core/error.h"
#include "grammar/ebnf_parser.h"
#include "grammar/json_text.h"
#include "grammar/regex_to_grammar.h"

namespace seam::grammar {

namespace {

Grammar choice_grammar(const std::string& text) {
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("choice: not valid JSON: ") + e.what());
  }
  SEAM_CHECK(list.is_array() && !list.empty(), "choice: expected a non-empty array of strings");
  std::vector<Expr> alts;
  for (const auto& v : list) {
    SEAM_CHECK(v.is_string(), "choice: expected a non-empty array of strings");
    alts.push_back(literal(v.get<std::string>()));
  }
  Grammar g;
  g.add_rule("root", choice(std::move(alts)));
  return g;
}

}  // namespace

Grammar constraint_grammar(const Constraint& c) {
  switch (c.kind) {
    case ConstraintKind::kJsonSchema:
      return json_schema_to_grammar(std::string_view(c.text), c.json_options);
    case ConstraintKind::kJsonObject:
      return json_object_grammar(c.json_options);
    case ConstraintKind::kRegex:
      return regex_to_grammar(c.text);
    case ConstraintKind::kEbnf:
      return parse_ebnf(c.text);
    case ConstraintKind::kChoice:
      return choice_grammar(c.text);
  }
  throw Error("grammar: unknown constraint kind");
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t max_cache_bytes,
                                 CompileOptions options)
    : vocab_(std::move(vocab)), options_(options), cache_(max_cache_bytes) {
  SEAM_CHECK(vocab_ != nullptr, "grammar: a compiler needs a vocabulary");
}

std::string GrammarCompiler::cache_key(const Constraint& c) {
  std::string key;
  key += static_cast<char>('0' + static_cast<int>(c.kind));
  key += c.json_options.any_whitespace ? 'w' : 'c';
  key += c.json_options.strict_properties ? 's' : 'l';
  key += '\n';
  key += c.text;
  return key;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::compile(const Constraint& c) {
  const std::string key = cache_key(c);
  if (auto hit = cache_.find(key)) return hit;
  auto compiled = std::make_shared<const CompiledGrammar>(constraint_grammar(c), vocab_, options_);
  // Charged at the bounds of what it may grow to: its program plus its two mask caches.
  cache_.insert(
      key, compiled,
      compiled->memory_bytes() + key.size() + options_.state_mask_cache_bytes + options_.stack_top_mask_bytes);
  return compiled;
}

GrammarCompilerStats GrammarCompiler::stats() const {
  return {cache_.size(), cache_.cost(), cache_.n_hits(), cache_.n_misses()};
}

}  // namespace seam::grammar
