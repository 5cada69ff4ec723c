#include "tokenizer/sentencepiece_spec.h"

#include <cstdint>
#include <string>

#include "core/error.h"

namespace seam {

namespace {

// Protobuf wire format: each field is a varint key (number << 3 | wire type)
// then a varint (0), 8 bytes (1), a varint length and bytes (2) or 4 bytes (5).
class WireReader {
 public:
  explicit WireReader(std::string_view s) : s_(s) {}
  bool done() const { return pos_ >= s_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      SEAM_CHECK(pos_ < s_.size(), "tokenizer.model: truncated varint");
      const auto b = static_cast<unsigned char>(s_[pos_++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw Error("tokenizer.model: varint longer than 10 bytes");
  }

  // Reads one field: its number and wire type; a length-delimited value is
  // returned in `bytes`, a varint in `value`; fixed-size ones are skipped.
  void field(uint32_t& number, int& wire, uint64_t& value, std::string_view& bytes) {
    const uint64_t key = varint();
    number = uint32_t(key >> 3);
    wire = int(key & 7);
    value = 0;
    bytes = {};
    switch (wire) {
      case 0:
        value = varint();
        return;
      case 1:
        skip(8);
        return;
      case 2: {
        const uint64_t n = varint();
        SEAM_CHECK(n <= s_.size() - pos_, "tokenizer.model: a field runs past the end");
        bytes = s_.substr(pos_, size_t(n));
        pos_ += size_t(n);
        return;
      }
      case 5:
        skip(4);
        return;
      default:
        throw Error("tokenizer.model: unsupported protobuf wire type " + std::to_string(wire));
    }
  }

 private:
  void skip(size_t n) {
    SEAM_CHECK(n <= s_.size() - pos_, "tokenizer.model: a field runs past the end");
    pos_ += n;
  }
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

SentencePieceSpec read_sentencepiece_spec(std::string_view model) {
  SentencePieceSpec spec;
  std::string name;
  bool has_charsmap = false;
  uint32_t number = 0;
  int wire = 0;
  uint64_t value = 0;
  std::string_view bytes;
  for (WireReader top(model); !top.done();) {
    top.field(number, wire, value, bytes);
    if (number == 2 && wire == 2) {  // TrainerSpec
      for (WireReader t(bytes); !t.done();) {
        t.field(number, wire, value, bytes);
        if (number == 3 && wire == 0) spec.model_type = int(value);
        if (number == 35 && wire == 0) spec.byte_fallback = value != 0;
      }
    } else if (number == 3 && wire == 2) {  // NormalizerSpec
      for (WireReader n(bytes); !n.done();) {
        n.field(number, wire, value, bytes);
        if (number == 1 && wire == 2) name.assign(bytes);
        if (number == 2 && wire == 2) has_charsmap = !bytes.empty();
        if (number == 4 && wire == 0) spec.remove_extra_whitespaces = value != 0;
      }
    }
  }
  spec.identity_normalizer = name == "identity" || !has_charsmap;
  return spec;
}

}  // namespace seam
