// allOf as one schema. JSON Schema's allOf means an instance satisfies every listed schema (and
// the keywords beside allOf); the grammar converter enforces one schema at a time, so the list is
// merged first into a single schema that accepts exactly the values all of them accept, where the
// merge can be exact:
//  - local $refs in the list are followed, nested allOf flattened, `true` parts dropped;
//  - type: the intersection (integer within number); const and enum: the common values;
//  - minimum / minLength / minItems ...: the tightest bound of each keyword;
//  - properties: every part's, in order of first appearance; a property several parts constrain
//    gets the allOf of their schemas (merged again when converted); a part's additionalProperties
//    applies to the properties the part does not list: false drops them (an error when required),
//    a schema joins their allOf; the merged additionalProperties is false if any part's is, else
//    the allOf of the parts' schemas; a part that does not say leaves it to the converter's default;
//  - required: the union; items: the allOf of the parts' items;
//  - an anyOf / oneOf part is distributed: allOf [anyOf [A, B], C] is anyOf [allOf [A, C],
//    allOf [B, C]] (oneOf only when its alternatives are provably disjoint, as the converter asks),
//    within a budget of branches for the whole schema.
// Anything else that two parts set differently (two patterns, two formats, two prefixItems) has no
// exact merge here and is an "unsupported JSON Schema keyword" error naming it, like the
// converter's; a merge that leaves nothing to accept is an "invalid JSON Schema" error.
#pragma once
#include <nlohmann/json.hpp>
#include <cstddef>
#include <string>

namespace seam::grammar {

// What the merges of one conversion (json_schema_to_grammar) may still create: distributed branches,
// and schema nodes copied (parts, and the parts each branch repeats; a node is an object member,
// an array item or a scalar, a string counted by its bytes too). Each merge takes from the
// conversion's budget, and one that does not fit is refused. A per-merge bound would not do: each
// branch copies the other parts, and an allOf nested in them is merged again for every copy, so
// nesting would multiply the work; $refs through allOf can copy one large schema many times.
struct AllOfBudget {
  size_t branches = 256;
  size_t nodes = size_t{1} << 20;
};
inline constexpr size_t kAllOfBranchBudget = AllOfBudget{}.branches;

// `schema` holds "allOf" (an array); `root` resolves local $refs; `path` names `schema` in errors.
nlohmann::ordered_json merge_all_of(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& root,
                                    const std::string& path, AllOfBudget& budget);

}  // namespace seam::grammar
