// The few settings of a SentencePiece tokenizer.model that decide whether a
// token's length in bytes is bounded (text_bound.h), read straight from the
// serialized ModelProto: Debian's libsentencepiece ships no protobuf headers,
// and the wire format of four fields is small to read.
#pragma once
#include <string_view>

namespace seam {

struct SentencePieceSpec {
  int model_type = 1;                    // TrainerSpec.model_type: 1 unigram, 2 BPE, 3 word, 4 char
  bool byte_fallback = false;            // TrainerSpec.byte_fallback
  bool identity_normalizer = false;      // NormalizerSpec: name "identity" or no precompiled charsmap
  bool remove_extra_whitespaces = true;  // NormalizerSpec.remove_extra_whitespaces (collapses runs)
};

// Reads `model` (a serialized ModelProto). Throws seam::Error when the bytes
// are not well-formed protobuf.
SentencePieceSpec read_sentencepiece_spec(std::string_view model);

}  // namespace seam
