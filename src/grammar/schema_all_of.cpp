#include "grammar/schema_all_of.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/schema_common.h"
#include "grammar/schema_disjointness.h"

namespace seam::grammar {

namespace {

using json = nlohmann::ordered_json;

// Local $refs followed through allOf before a cycle is assumed (A: {allOf: [{$ref: A}]}).
constexpr int kMaxRefDepth = 32;

const std::set<std::string> kLowerBounds = {"minimum", "exclusiveMinimum", "minLength", "minItems"};
const std::set<std::string> kUpperBounds = {"maximum", "exclusiveMaximum", "maxLength", "maxItems"};

class AllOfMerger {
 public:
  AllOfMerger(const json& root, std::string path, AllOfBudget& budget) : root_(root), path_(std::move(path)), budget_(budget) {}

  json merge(const json& schema) {
    std::vector<json> parts;
    expand(schema, 0, parts);
    if (parts.empty()) return json::object();  // every part was `true`
    for (size_t i = 0; i < parts.size(); ++i)
      for (const char* k : {"anyOf", "oneOf"})
        if (parts[i].contains(k)) return distribute(parts, i, k);
    return merge_parts(parts);
  }

 private:
  // `s` as a list of parts with no allOf and no $ref at their top: refs followed, nested allOf
  // flattened, annotation-only and `true` schemas dropped.
  void expand(const json& s, int depth, std::vector<json>& parts) {
    if (depth > kMaxRefDepth) schema_invalid(path_ + "/allOf", "$refs through allOf nest too deeply (a cycle?)");
    // Every visit costs a node, whatever it copies: $refs fanning out through allOf to cheap leaves
    // would otherwise be walked ~10^depth times for free.
    charge(1);
    if (s.is_boolean()) {
      if (!s.get<bool>()) schema_invalid(path_ + "/allOf", "the schema 'false' matches nothing");
      return;
    }
    if (!s.is_object()) schema_invalid(path_ + "/allOf", "a schema must be an object or a boolean");
    size_t n = 0;
    for (const auto& [k, v] : s.items())
      if (k != "allOf" && k != "$ref" && !is_schema_annotation(k)) n += 1 + nodes_of(v);
    charge(n);  // before the copy
    json own = json::object();
    for (const auto& [k, v] : s.items())
      if (k != "allOf" && k != "$ref" && !is_schema_annotation(k)) own[k] = v;
    if (!own.empty()) parts.push_back(std::move(own));
    if (s.contains("$ref")) expand(resolve(s["$ref"]), depth + 1, parts);
    if (s.contains("allOf")) {
      const json& list = s["allOf"];
      if (!list.is_array() || list.empty()) schema_invalid(path_ + "/allOf", "expected a non-empty array");
      for (const json& sub : list) expand(sub, depth + 1, parts);
    }
  }

  // The nodes of `j` (AllOfBudget's count), without copying it.
  static size_t nodes_of(const json& j) {
    size_t n = 1;
    if (j.is_string()) n += j.get_ref<const std::string&>().size();
    if (j.is_object())
      for (const auto& [k, v] : j.items()) n += k.size() + nodes_of(v);
    if (j.is_array())
      for (const json& v : j) n += nodes_of(v);
    return n;
  }

  void charge(size_t nodes) {
    if (nodes > budget_.nodes)
      schema_unsupported("allOf", path_, "merging its schemas would copy more than " + std::to_string(AllOfBudget{}.nodes) +
                                             " schema nodes in the schema");
    budget_.nodes -= nodes;
  }

  const json& resolve(const json& ref) const {
    if (!ref.is_string()) schema_invalid(path_ + "/allOf", "a $ref must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#')
      schema_unsupported("$ref", path_, "only local references ('#...') are supported, not '" + target + "'");
    const std::string pointer = target.substr(1);
    if (!pointer.empty() && pointer[0] != '/') schema_unsupported("$ref", path_, "anchors ('" + target + "') are not supported");
    try {
      return pointer.empty() ? root_ : root_.at(json::json_pointer(pointer));
    } catch (const std::exception&) {
      schema_invalid(path_ + "/$ref", "'" + target + "' points to nothing");
    }
  }

  // allOf [..., anyOf [A, B], ...] is anyOf [allOf [..., A, ...], allOf [..., B, ...]]; each
  // branch is merged again when the converter reaches it.
  json distribute(const std::vector<json>& parts, size_t at, const char* keyword) {
    const json& alts = parts[at][keyword];
    if (!alts.is_array() || alts.empty()) schema_invalid(path_ + "/allOf", std::string("expected a non-empty ") + keyword);
    if (alts.size() > budget_.branches)
      schema_unsupported("allOf", path_, "its anyOf / oneOf parts distributed over the other parts make more than " +
                                             std::to_string(kAllOfBranchBudget) + " alternatives in the schema");
    budget_.branches -= alts.size();
    size_t rest_nodes = 0;
    for (const json& p : parts) rest_nodes += nodes_of(p);
    charge(alts.size() * rest_nodes);  // each branch repeats the other parts
    // A oneOf stays exact as a choice only when its alternatives cannot overlap (as the converter
    // asks of any oneOf); the distributed branches are then disjoint too.
    if (std::string(keyword) == "oneOf")
      for (size_t i = 0; i < alts.size(); ++i)
        for (size_t j = i + 1; j < alts.size(); ++j)
          if (!schemas_disjoint(alts[i], alts[j], root_))
            schema_unsupported("oneOf", path_ + "/allOf",
                               "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                                   " may both match (oneOf is enforced only when its alternatives are disjoint)");
    std::vector<json> rest;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i != at) {
        rest.push_back(parts[i]);
        continue;
      }
      json without = parts[i];
      without.erase(keyword);
      if (!without.empty()) rest.push_back(std::move(without));
    }
    json out = json::array();
    for (const json& alt : alts) {
      json all = json::array();
      all.push_back(alt);
      for (const json& r : rest) all.push_back(r);
      out.push_back(json{{"allOf", std::move(all)}});
    }
    return json{{"anyOf", std::move(out)}};
  }

  // The types both lists admit; an integer is a number.
  static std::vector<std::string> common_types(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    auto has = [](const std::vector<std::string>& l, const std::string& t) {
      return std::find(l.begin(), l.end(), t) != l.end();
    };
    std::vector<std::string> out;
    for (const std::string& t : a) {
      if (has(b, t))
        out.push_back(t);
      else if (t == "integer" && has(b, "number"))
        out.push_back("integer");
      else if (t == "number" && has(b, "integer"))
        out.push_back("integer");
    }
    std::vector<std::string> unique;
    for (const std::string& t : out)
      if (!has(unique, t)) unique.push_back(t);
    return unique;
  }

  json merge_parts(const std::vector<json>& parts) {
    json m = json::object();
    std::optional<std::vector<std::string>> types;
    std::vector<std::string> prop_order;
    std::map<std::string, std::vector<json>> prop_schemas;
    std::vector<std::string> required;
    std::vector<json> items, items_prefixes;  // each part's items, and the prefixItems beside it
    bool object_keywords = false;
    for (const json& p : parts) {
      for (const auto& [k, v] : p.items()) {
        if (k == "type") {
          const std::vector<std::string> t = schema_type_names(v, path_);
          types = types ? common_types(*types, t) : t;
          if (types->empty()) schema_invalid(path_ + "/allOf", "its schemas have no type in common");
        } else if (k == "properties") {
          if (!v.is_object()) schema_invalid(path_ + "/allOf", "'properties' must be an object");
          object_keywords = true;
          for (const auto& [name, schema] : v.items()) {
            if (!prop_schemas.count(name)) prop_order.push_back(name);
            prop_schemas[name].push_back(schema);
          }
        } else if (k == "required") {
          if (!v.is_array()) schema_invalid(path_ + "/allOf", "'required' must be an array of names");
          object_keywords = true;
          for (const json& n : v) {
            if (!n.is_string()) schema_invalid(path_ + "/allOf", "'required' must be an array of names");
            if (std::find(required.begin(), required.end(), n.get<std::string>()) == required.end())
              required.push_back(n.get<std::string>());
          }
        } else if (k == "additionalProperties") {
          object_keywords = true;
        } else if (k == "items") {
          items.push_back(v);
          items_prefixes.push_back(p.contains("prefixItems") ? p["prefixItems"] : json());
        } else if ((k == "exclusiveMinimum" || k == "exclusiveMaximum") && v.is_boolean()) {
          // Draft 4's flag modifies its part's minimum / maximum, which the merge takes apart from it.
          schema_unsupported(k, path_ + "/allOf", "draft 4's boolean form is not merged");
        } else if (k == "enum") {
          if (!v.is_array()) schema_invalid(path_ + "/allOf", "'enum' must be an array");
          if (!m.contains("enum")) {
            m["enum"] = v;
          } else {
            json common = json::array();
            for (const json& x : m["enum"])
              if (std::find(v.begin(), v.end(), x) != v.end()) common.push_back(x);
            m["enum"] = std::move(common);
          }
        } else if (k == "const") {
          if (m.contains("const") && m["const"] != v) schema_invalid(path_ + "/allOf", "two different consts match nothing");
          m["const"] = v;
        } else if ((kLowerBounds.count(k) || kUpperBounds.count(k)) && v.is_number() && m.contains(k) &&
                   m[k].is_number()) {
          const bool take = kLowerBounds.count(k) ? v.get<double>() > m[k].get<double>()
                                                  : v.get<double>() < m[k].get<double>();
          if (take) m[k] = v;
        } else if (!m.contains(k)) {
          m[k] = v;
        } else if (m[k] != v) {
          schema_unsupported(k, path_ + "/allOf", "its schemas set it differently, which has no single equivalent here");
        }
      }
    }
    if (types) m["type"] = types->size() == 1 ? json((*types)[0]) : json(*types);
    // A const beside an enum, or either beside a type, is checked by the converter.
    if (m.contains("enum") && m["enum"].empty()) schema_invalid(path_ + "/allOf", "its enums have no value in common");
    if (!items.empty()) {
      // A part's "items" covers the elements after its own prefixItems (all of them when it has
      // none); beside another part's tuple it would apply from a different index.
      for (const json& prefix : items_prefixes)
        if (m.contains("prefixItems") && prefix != m["prefixItems"])
          schema_unsupported("items", path_ + "/allOf", "one part's items beside another part's prefixItems has no single equivalent here");
      m["items"] = all_of(items);
    }
    if (object_keywords) merge_object(parts, prop_order, prop_schemas, required, m);
    return m;
  }

  // One schema for a list of them: `false` if one is (nothing matches), `true` parts dropped,
  // the one left or several equal ones as themselves, else their allOf.
  static json all_of(const std::vector<json>& schemas) {
    std::vector<json> kept;
    for (const json& s : schemas) {
      if (s.is_boolean() && !s.get<bool>()) return false;
      if (s.is_boolean() || (s.is_object() && s.empty())) continue;
      if (std::find(kept.begin(), kept.end(), s) == kept.end()) kept.push_back(s);
    }
    if (kept.empty()) return true;
    if (kept.size() == 1) return kept[0];
    json list = json::array();
    for (const json& s : kept) list.push_back(s);
    return json{{"allOf", std::move(list)}};
  }

  // properties, required and additionalProperties of the merged object (header comment).
  void merge_object(const std::vector<json>& parts, const std::vector<std::string>& prop_order,
                    std::map<std::string, std::vector<json>>& prop_schemas, const std::vector<std::string>& required,
                    json& m) const {
    // Names constrained only through a part's additionalProperties become properties too.
    std::vector<std::string> names = prop_order;
    for (const std::string& r : required)
      if (!prop_schemas.count(r)) names.push_back(r);
    json props = json::object();
    for (const std::string& name : names) {
      std::vector<json> schemas = prop_schemas.count(name) ? prop_schemas[name] : std::vector<json>{};
      bool forbidden = false;
      for (const json& p : parts) {
        if (!p.contains("additionalProperties")) continue;
        if (p.contains("properties") && p["properties"].is_object() && p["properties"].contains(name)) continue;
        const json& a = p["additionalProperties"];
        if (a.is_boolean()) {
          forbidden = forbidden || !a.get<bool>();
        } else {
          schemas.push_back(a);
        }
      }
      const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
      const json merged = schemas.empty() ? json() : all_of(schemas);
      forbidden = forbidden || (merged.is_boolean() && !merged.get<bool>());
      if (forbidden) {
        if (is_required)
          schema_invalid(path_ + "/allOf", "'" + name + "' is required but one of its schemas allows no such property");
        continue;  // an instance cannot have it: left out
      }
      if (!schemas.empty()) props[name] = merged;
    }
    if (!props.empty()) m["properties"] = std::move(props);
    if (!required.empty()) m["required"] = required;
    std::vector<json> extra;
    bool any_false = false, any_true = false;
    for (const json& p : parts) {
      if (!p.contains("additionalProperties")) continue;
      const json& a = p["additionalProperties"];
      if (a.is_boolean()) {
        (a.get<bool>() ? any_true : any_false) = true;
      } else {
        extra.push_back(a);
      }
    }
    if (any_false)
      m["additionalProperties"] = false;
    else if (!extra.empty())
      m["additionalProperties"] = all_of(extra);
    else if (any_true)
      m["additionalProperties"] = true;
    else
      m.erase("additionalProperties");
  }

  const json& root_;
  const std::string path_;
  AllOfBudget& budget_;
};

}  // namespace

json merge_all_of(const json& schema, const json& root, const std::string& path, AllOfBudget& budget) {
  return AllOfMerger(root, path, budget).merge(schema);
}

}  // namespace seam::grammar
