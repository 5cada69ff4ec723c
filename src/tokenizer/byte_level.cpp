#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace seam::byte_level {

namespace {
struct Map {
  std::array<std::string, 256> chars;
  std::array<int16_t, 324> bytes;  // indexed by code point; the map's range is < U+0144

  Map() {
    bytes.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      utf8::append(chars[b], cp);
      bytes[cp] = static_cast<int16_t>(b);
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
  for (char c : s) out += m.chars[static_cast<uint8_t>(c)];
}

std::string encode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  encode_append(s, out);
  return out;
}

}  // namespace seam::byte_level
