// The request fields seam knows, in one table: for each OpenAI, sglang and
// vLLM field of /v1/completions, /v1/chat/completions, /tokenize and
// /detokenize, whether seam honours it, accepts it because it changes nothing
// seam produces, or refuses it (a 400 naming the field). A field that is in no
// row for the endpoint is refused too: a client that sends a field expects it
// to matter, and silently ignoring it would change the answer behind its back
// (vLLM ignores unknown fields with a log line, sglang ignores them silently).
//
// check_request_fields() applies the table to a parsed body before anything
// reads it, so a row's status is the single switch: work that implements a
// refused field flips its row to `honoured` and reads the field in the parser.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace seam {

enum class FieldStatus {
  honoured,                   // read and acted on
  harmless,                   // accepted and ignored: it changes nothing seam produces (`reason` says why)
  refused,                    // 400: not implemented, and it would change the output
  refused_until_implemented,  // 400 today; work in flight flips the row to honoured (`reason` names it)
};

// The routes a row applies to (a bit set).
enum Endpoint : uint8_t {
  k_completions = 1,       // POST /v1/completions
  k_chat = 2,              // POST /v1/chat/completions
  k_tokenize = 4,          // POST /tokenize
  k_detokenize = 8,        // POST /detokenize
  k_generate = k_completions | k_chat,
  k_all = k_completions | k_chat | k_tokenize | k_detokenize,
};

struct RequestField {
  const char* name;
  uint8_t endpoints;  // Endpoint bits
  FieldStatus status;
  const char* origin;  // "OpenAI", "vLLM", "sglang", "vLLM, sglang", ...
  const char* reason;  // honoured: what it does; harmless: why it changes nothing; refused: what is missing
  // Refused rows only: a JSON array of the values that ask for nothing (the
  // field's default, e.g. `[1]` for best_of); such a value is accepted as if
  // the field were absent. nullptr: every value is refused. null is always
  // absent (as OpenAI treats it).
  const char* neutral_values = nullptr;
};

// Every row, in table order.
std::span<const RequestField> request_fields();

// The row of `name` for `endpoint` (one bit), or nullptr.
const RequestField* find_request_field(std::string_view name, Endpoint endpoint);

// "/v1/completions", ... for messages.
const char* endpoint_path(Endpoint endpoint);

// Throws ApiError(400) naming the first field of `body` (a JSON object) that
// is unknown for `endpoint`, or refused with a value that asks for something.
void check_request_fields(const nlohmann::json& body, Endpoint endpoint);

}  // namespace seam
