// The few Unicode facts Python's str methods need: UTF-8 code points (len(),
// indexing and slicing count code points), str.isspace() for strip()/split(),
// str.isprintable() for repr(), and case mapping (ASCII, Latin-1, Greek and
// Cyrillic; other scripts are left as they are).
#pragma once
#include <string>
#include <vector>

namespace seam::jinja {

// Decodes the code point at `i` and advances `i`; a malformed byte decodes as itself.
char32_t utf8_next(const std::string& s, size_t& i);
void utf8_append(std::string& out, char32_t cp);
std::vector<char32_t> utf8_decode(const std::string& s);
std::string utf8_encode(const std::vector<char32_t>& cps);
size_t utf8_length(const std::string& s);

bool is_space(char32_t cp);      // Python str.isspace()
bool is_printable(char32_t cp);  // Python str.isprintable() (approximation outside the common ranges)
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);
bool is_alpha(char32_t cp);  // a letter that has a case, or any non-ASCII letter-like code point
bool is_digit(char32_t cp);

std::string upper(const std::string& s);
std::string lower(const std::string& s);

}  // namespace seam::jinja
