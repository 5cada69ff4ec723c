// The per-request log of `seam serve --log-requests` (sglang's flag): one
// line when a request is accepted and one per finished choice, at the level
// --log-requests-level asks (core/log.h: the prompt text only from 2 up).
// Lines are one line each: texts are JSON-escaped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "api/sampling_params.h"

namespace seam {

// After a request passed every check. `prompts` are the texts as tokenized
// (the rendered chat, or each completion prompt; empty for token-id prompts).
void log_request_accepted(const std::string& request_id, const char* kind, const std::vector<std::string>& prompts,
                          const std::vector<std::vector<int32_t>>& prompt_ids, int n, const SamplingParams& params);

// When the engine finished choice `choice` of the request (any thread).
void log_request_finished(const std::string& request_id, int choice, const RequestOutput& out);

}  // namespace seam
