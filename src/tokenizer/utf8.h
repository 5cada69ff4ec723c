// UTF-8 helpers shared by the tokenizers and the incremental detokenizer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace seam::utf8 {

// Decodes the code point at s[pos] (s must be valid UTF-8 there) and returns
// its byte length in *n_bytes.
char32_t decode_at(std::string_view s, size_t pos, size_t* n_bytes);

// Appends the UTF-8 encoding of cp to out.
void append(std::string& out, char32_t cp);

// Byte length of the sequence that starts with lead byte b (1 for invalid leads).
size_t sequence_length(unsigned char b);

// The byte offset of the first invalid sequence, or npos when s is valid UTF-8
// (no overlongs, no surrogates, nothing above U+10FFFF).
size_t find_invalid(std::string_view s);

// Rust's String::from_utf8_lossy: every maximal invalid subpart becomes one U+FFFD.
std::string to_valid_lossy(std::string_view s);

// Number of trailing bytes of s that form an incomplete-but-valid-so-far
// sequence (a prefix of a valid multi-byte character), 0 if none.
size_t incomplete_tail(std::string_view s);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace seam::utf8
