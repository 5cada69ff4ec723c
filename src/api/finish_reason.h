// FinishReason: why a request stopped generating (OpenAI's finish_reason).
#pragma once

namespace seam {

enum class FinishReason { none, stop, length, abort };

inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::none: return "none";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
  }
  return "?";
}

}  // namespace seam
