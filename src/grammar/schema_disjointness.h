// Whether two JSON Schemas can never accept the same value, judged
// conservatively (false when unsure): disjoint type sets (integer overlaps
// number), disjoint const/enum values, or objects with a property required by
// both whose const/enum values are disjoint (a discriminator). oneOf is
// enforced as a choice, which is exact only when its branches are disjoint.
#pragma once
#include <nlohmann/json.hpp>

namespace seam::grammar {

// `root` resolves local $refs ("#/...") in either schema.
bool schemas_disjoint(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                      const nlohmann::ordered_json& root);

}  // namespace seam::grammar
