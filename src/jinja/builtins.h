// The global functions a template can call: jinja2's range, namespace, dict,
// cycler and joiner, and transformers' raise_exception and strftime_now.
#pragma once
#include "jinja/evaluator.h"

namespace seam::jinja {

// Adds the globals to `scope`; range() is bounded by config.limits.max_loop_iterations.
void add_builtins(Scope& scope, const RenderConfig& config);

}  // namespace seam::jinja
