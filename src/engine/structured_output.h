// StructuredOutput: the engine's side of structured output (architecture.md "Structured
// output: engine, runtime and backend"). It owns the GrammarCompiler of the served
// vocabulary, turns a request's OutputConstraint into a compiled grammar on the submitting
// thread (a compile error is the client's 400), and writes a constrained row's token mask
// for the runner's host callback on the engine thread. Internal to engine/: the face
// (engine.h) shows no grammar type.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "api/output_constraint.h"
#include "api/sampling_params.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace seam {

class StructuredOutput {
 public:
  // The vocabulary's stop ids: the tokenizer's EOS and `eos_ids` (the model's), each allowed
  // exactly where a grammar may end. Compiled grammars are cached up to `cache_bytes`.
  StructuredOutput(const Tokenizer& tokenizer, const std::vector<int32_t>& eos_ids, size_t cache_bytes);

  // Thread-safe. The compiled grammar of `c` (cached by its text). A bad schema, regex or
  // grammar, or a JSON Schema keyword the engine cannot enforce, throws
  // RequestError(invalid_request) whose param is c.field ("constraint" when empty) and whose
  // message is the compiler's reason; a broken invariant stays an InternalError.
  std::shared_ptr<const grammar::CompiledGrammar> compile(const OutputConstraint& c) const;

  // Engine thread. Writes the next-token mask of `m` into every word of words[0, n_words)
  // (whatever they held; ids past the matcher's vocabulary are forbidden), then sets the request's own
  // stop_token_ids where the grammar may end and clears them elsewhere, so that a stop id
  // never ends a request inside its structure.
  void fill_mask(grammar::GrammarMatcher& m, const SamplingParams& params, uint32_t* words, int n_words);

  double compile_ms_total() const { return 1e-3 * double(compile_us_.load()); }
  grammar::GrammarCompilerStats cache_stats() const { return compiler_->stats(); }

 private:
  std::unique_ptr<grammar::GrammarCompiler> compiler_;
  std::vector<uint32_t> scratch_;  // a matcher mask wider than the model's vocabulary
  mutable std::atomic<uint64_t> compile_us_{0};
};

}  // namespace seam
