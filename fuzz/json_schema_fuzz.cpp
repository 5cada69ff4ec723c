// Structured output's JSON Schema converter (grammar/json_schema_to_grammar.h) on untrusted
// schemas, as a request's response_format brings them: any bytes either become a grammar that
// lowers to a byte program, or throw seam::Error ("unsupported ..." / "invalid ..." / a size limit).
// allOf merging, number ranges, formats and $refs all run here; a crash, a hang (libFuzzer's
// -timeout) or memory past -rss_limit_mb is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "grammar/grammar_program.h"
#include "grammar/json_schema_to_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool any_whitespace : {false, true}) {
    try {
      grammar::JsonSchemaOptions o;
      o.any_whitespace = any_whitespace;
      const grammar::Grammar g = grammar::json_schema_to_grammar(text, o);
      (void)grammar::lower_grammar(g);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      fuzz::finding("json_schema_to_grammar threw a non-seam::Error", e.what());
    }
  }
  return 0;
}
