#include "grammar/schema_disjointness.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace seam::grammar {

namespace {

using json = nlohmann::ordered_json;

// The branch's schema with local $refs followed (nullptr for a ref it cannot follow).
const json* resolve(const json* s, const json& root) {
  int depth = 0;
  while (s->is_object() && s->contains("$ref") && depth++ < 16) {
    const json& r = (*s)["$ref"];
    if (!r.is_string() || r.get<std::string>().empty() || r.get<std::string>()[0] != '#') return nullptr;
    const std::string ptr = r.get<std::string>().substr(1);
    try {
      s = ptr.empty() ? &root : &root.at(json::json_pointer(ptr));
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  return s;
}

std::string type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  return v.is_array() ? "array" : "object";
}

// The types a branch admits; nullopt when unknown (then it may overlap anything).
std::optional<std::set<std::string>> branch_types(const json* s, const json& root) {
  s = resolve(s, root);
  if (s == nullptr || !s->is_object()) return std::nullopt;
  std::set<std::string> t;
  if (s->contains("const")) return std::set<std::string>{type_of((*s)["const"])};
  if (s->contains("enum") && (*s)["enum"].is_array()) {
    for (const json& v : (*s)["enum"]) t.insert(type_of(v));
    return t;
  }
  if (!s->contains("type")) return std::nullopt;
  const json& ty = (*s)["type"];
  if (ty.is_string())
    t.insert(ty.get<std::string>());
  else if (ty.is_array())
    for (const json& x : ty)
      if (x.is_string()) t.insert(x.get<std::string>());
  return t;
}

// The values a schema allows when it is a const or an enum.
std::optional<std::vector<json>> fixed_values(const json* s) {
  if (s == nullptr || !s->is_object()) return std::nullopt;
  if (s->contains("const")) return std::vector<json>{(*s)["const"]};
  if (s->contains("enum") && (*s)["enum"].is_array())
    return std::vector<json>((*s)["enum"].begin(), (*s)["enum"].end());
  return std::nullopt;
}

bool values_disjoint(const std::vector<json>& a, const std::vector<json>& b) {
  for (const json& x : a)
    for (const json& y : b)
      if (x == y) return false;
  return true;
}

}  // namespace

bool schemas_disjoint(const json& a_schema, const json& b_schema, const json& root) {
  const json* a = resolve(&a_schema, root);
  const json* b = resolve(&b_schema, root);
  if (a == nullptr || b == nullptr) return false;
  if (auto va = fixed_values(a), vb = fixed_values(b); va && vb) return values_disjoint(*va, *vb);
  const auto ta = branch_types(a, root), tb = branch_types(b, root);
  if (ta && tb) {
    bool overlap = false;
    for (const std::string& x : *ta)
      for (const std::string& y : *tb)
        overlap = overlap || x == y || (x == "integer" && y == "number") || (x == "number" && y == "integer");
    if (!overlap) return true;
  }
  // Objects told apart by a required property with disjoint const/enum values (a discriminator).
  if (!a->is_object() || !b->is_object() || !a->contains("properties") || !b->contains("properties")) return false;
  auto required = [](const json* s, const std::string& k) {
    if (!s->contains("required") || !(*s)["required"].is_array()) return false;
    for (const json& r : (*s)["required"])
      if (r == k) return true;
    return false;
  };
  for (const auto& [k, pa] : (*a)["properties"].items()) {
    if (!(*b)["properties"].contains(k) || !required(a, k) || !required(b, k)) continue;
    const auto va = fixed_values(resolve(&pa, root)), vb = fixed_values(resolve(&(*b)["properties"][k], root));
    if (va && vb && values_disjoint(*va, *vb)) return true;
  }
  return false;
}

}  // namespace seam::grammar
