#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace seam::byte_level {

namespace {
struct Map {
  std::array<std::string, 256> chars;
  // The same characters as (length, bytes) for the hot encode loop: every
  // character of the map is 1 or 2 bytes of UTF-8.
  std::array<uint8_t, 256> lengths;
  std::array<std::array<char, 2>, 256> utf8;
  std::array<int16_t, 324> bytes;  // indexed by code point; the map's range is < U+0144

  Map() {
    bytes.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      utf8::append(chars[b], cp);
      bytes[cp] = static_cast<int16_t>(b);
      lengths[b] = static_cast<uint8_t>(chars[b].size());
      utf8[b] = {chars[b][0], chars[b].size() > 1 ? chars[b][1] : '\0'};
    }
  }
};

const Map& map() {
  static const Map m;
  return m;
}
}  // namespace

const std::string& byte_to_char(uint8_t b) { return map().chars[b]; }

int char_to_byte(char32_t cp) { return cp < 324 ? map().bytes[cp] : -1; }

void encode_append(std::string_view s, std::string& out) {
  const Map& m = map();
  size_t n = out.size();
  out.resize(n + 2 * s.size());  // at most 2 bytes per input byte
  char* dst = out.data();
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    dst[n] = m.utf8[b][0];
    dst[n + 1] = m.utf8[b][1];
    n += m.lengths[b];
  }
  out.resize(n);
}

std::string encode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  encode_append(s, out);
  return out;
}

}  // namespace seam::byte_level
