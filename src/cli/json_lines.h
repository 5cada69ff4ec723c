// The line loop of the JSON-lines commands (seam tokenize, detokenize, chat-template):
// one request a line on stdin, one answer a line on stdout, a bad line reported with
// its number and counted, never thrown out of the loop.
#pragma once
#include <exception>
#include <functional>
#include <iosfwd>
#include <string>

namespace seam::cli {

// Runs `handle` on every non-blank line of `in` (it writes its own answer). An exception
// it throws is written to `err` as "line N: what" and handed to `on_error`, when given
// (chat-template answers such a line too). Returns 1 if any line failed, else 0.
int for_each_line(std::istream& in, std::ostream& err, const std::function<void(const std::string& line)>& handle,
                  const std::function<void(const std::exception& e)>& on_error = {});

}  // namespace seam::cli
