// Unicode canonical normalization forms NFD and NFC (UAX #15), for the
// tokenizer.json "NFC"/"NFD" normalizers (Qwen2 uses NFC).
#pragma once
#include <string>
#include <string_view>

namespace seam::unicode {

// Both take valid UTF-8.
std::string nfd(std::string_view s);
std::string nfc(std::string_view s);

}  // namespace seam::unicode
