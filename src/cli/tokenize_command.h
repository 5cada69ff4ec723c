// The line loops behind `seam tokenize` and `seam detokenize`, separate from
// flag parsing so that tests can drive them with string streams.
#pragma once
#include <iosfwd>

#include "tokenizer/tokenizer.h"

namespace seam::cli {

// Reads JSON lines {"text": str, "add_special_tokens": bool (default true)}
// and writes {"ids": [...]} per line. A bad line gets one error message on
// `err` (with its line number) and no output; returns 1 if any line was bad.
int tokenize_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out, std::ostream& err);

// Reads {"ids": [...], "skip_special_tokens": bool (default false)} and writes {"text": str}.
int detokenize_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace seam::cli
