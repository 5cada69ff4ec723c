// GPT-2's byte <-> unicode map, used by the ByteLevel pre-tokenizer, normalizer
// and decoder: every byte becomes one printable character, so BPE vocabularies
// can hold arbitrary bytes as text. Printable Latin-1 bytes map to themselves;
// the other 68 bytes map to U+0100.. in byte order.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace seam::byte_level {

// The UTF-8 of the character that stands for byte b.
const std::string& byte_to_char(uint8_t b);

// The byte that character cp stands for, or -1 when cp is not in the map.
int char_to_byte(char32_t cp);

// Maps every byte of s to its character.
std::string encode(std::string_view s);
void encode_append(std::string_view s, std::string& out);

}  // namespace seam::byte_level
