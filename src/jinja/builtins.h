// The global functions a template can call: jinja2's range, namespace, dict,
// cycler and joiner, and transformers' raise_exception and strftime_now.
#pragma once
#include <memory>
#include <vector>

#include "jinja/evaluator.h"

namespace seam::jinja {

// The namespaces a render made (namespace()): the only mutable objects, so the only way a render can
// build a reference cycle ({% set ns.self = ns %}, or ns holding a loop whose loop() holds the
// scope holding ns), which reference counting never frees. The render's owner clears every one
// still alive when the render ends (release_namespaces), breaking any cycle.
using NamespaceRegistry = std::vector<std::weak_ptr<DictObj>>;
void release_namespaces(NamespaceRegistry& namespaces);

// Adds the globals to `scope`; range() is bounded by config.limits.max_loop_iterations; namespace()
// records what it makes in `namespaces`.
void add_builtins(Scope& scope, const RenderConfig& config, const std::shared_ptr<NamespaceRegistry>& namespaces);

}  // namespace seam::jinja
