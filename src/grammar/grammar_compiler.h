// The front door for requests: a constraint as (kind, text) -> a shared
// CompiledGrammar, compiled once per text and kept in an LRU cache bounded in
// bytes. One GrammarCompiler per vocabulary (per served model). Thread-safe.
// Bad input (schema, regex, grammar) throws seam::Error with the reason: the
// server answers 400 with it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema_to_grammar.h"
#include "grammar/lru_cache.h"
#include "grammar/token_vocabulary.h"

namespace seam::grammar {

enum class ConstraintKind {
  kJsonSchema,  // text: the schema (OpenAI json_schema.schema, sglang json_schema, vLLM json / guided_json)
  kJsonObject,  // text ignored: any JSON object (response_format json_object)
  kRegex,       // text: the pattern (sglang regex, vLLM regex / guided_regex)
  kEbnf,        // text: GBNF / xgrammar EBNF (sglang ebnf, vLLM grammar / guided_grammar)
  kChoice,      // text: a JSON array of strings (vLLM choice / guided_choice)
};

struct Constraint {
  ConstraintKind kind = ConstraintKind::kJsonSchema;
  std::string text;
  JsonSchemaOptions json_options;  // kJsonSchema / kJsonObject
};

// The grammar of a constraint (no vocabulary needed; throws seam::Error).
Grammar constraint_grammar(const Constraint& c);

struct GrammarCompilerStats {
  size_t n_entries = 0;
  size_t n_bytes = 0;
  size_t n_hits = 0;
  size_t n_misses = 0;
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t max_cache_bytes = size_t{1} << 30,
                           CompileOptions options = {});

  // The compiled grammar of `c`, from the cache or compiled now.
  std::shared_ptr<const CompiledGrammar> compile(const Constraint& c);
  GrammarCompilerStats stats() const;
  const TokenVocabulary& vocab() const { return *vocab_; }

 private:
  static std::string cache_key(const Constraint& c);

  std::shared_ptr<const TokenVocabulary> vocab_;
  CompileOptions options_;
  LruCache<CompiledGrammar> cache_;
};

}  // namespace seam::grammar
