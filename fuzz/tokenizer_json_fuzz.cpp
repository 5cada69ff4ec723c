// tokenizer.json loading: any bytes either load (and then encode and decode
// a fixed text and the input itself without failing) or throw seam::Error.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::write_file(fuzz::scratch_dir() + "/tokenizer.json", bytes);
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = load_tokenizer(fuzz::scratch_dir());
  } catch (const Error&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::finding("load_tokenizer threw a non-seam::Error", e.what());
  }
  const std::string texts[] = {"Hello world! 123 <s> \xC3\xA9 \xE4\xB8\xAD  \n\t",
                               utf8::to_valid_lossy(bytes.substr(0, 256))};
  for (const std::string& text : texts) {
    try {
      const std::vector<int32_t> ids = tok->encode(text, true);
      (void)tok->decode(ids, false);
      (void)tok->decode(ids, true);
      // The length bound must never refuse a text that fits.
      if (tok->min_ids(text) > tok->encode(text, false).size()) fuzz::finding("min_ids overstates", text.c_str());
      const auto limited = tok->encode_at_most(text, true, ids.size());
      if (!limited || *limited != ids) fuzz::finding("encode_at_most differs at the limit", text.c_str());
    } catch (const Error&) {
    } catch (const std::exception& e) {
      fuzz::finding("encode/decode threw a non-seam::Error", e.what());
    }
  }
  return 0;
}
