// The line loop behind `seam chat-template`, separate from flag parsing so
// that tests can drive it with string streams.
#pragma once
#include <iosfwd>

#include "jinja/hf_chat_template.h"

namespace seam::cli {

// Reads JSON lines {"messages", "tools", "documents", "add_generation_prompt",
// "kwargs"} and writes one line per conversation: {"text": str}, or
// {"error": str, "error_kind": str} when rendering fails (error_kind "raised" for
// the template's own raise_exception, whose message is then verbatim; "syntax",
// "type", "undefined", "limit"; "request" for a malformed line, also reported on
// `err` with its line number). Returns 1 if any line was malformed, else 0.
int chat_template_lines(const jinja::HfChatTemplate& chat_template, std::istream& in, std::ostream& out,
                        std::ostream& err);

}  // namespace seam::cli
