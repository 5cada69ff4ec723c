#include "server/tool_choice_constraint.h"

namespace seam {

namespace {

using ojson = nlohmann::ordered_json;

ojson parameters_of(const ojson& tool) {
  const ojson& f = tool["function"];
  auto it = f.find("parameters");
  if (it == f.end() || it->is_null()) return ojson{{"type", "object"}};
  return *it;
}

}  // namespace

OutputConstraint tool_choice_constraint(const ojson& tools, const std::string& name) {
  OutputConstraint c;
  c.kind = OutputConstraint::Kind::json_schema;
  c.field = "tool_choice";
  if (!name.empty()) {
    for (const ojson& t : tools)
      if (t["function"]["name"] == name) {
        c.text = parameters_of(t).dump();
        return c;
      }
    c.text = ojson{{"type", "object"}}.dump();  // not reached: the caller checked the name
    return c;
  }
  ojson any_of = ojson::array();
  for (const ojson& t : tools) {
    ojson call = {{"type", "object"},
                  {"properties",
                   {{"name", {{"type", "string"}, {"enum", ojson::array({t["function"]["name"]})}}},
                    {"parameters", parameters_of(t)}}},
                  {"required", ojson::array({"name", "parameters"})}};
    any_of.push_back(std::move(call));
  }
  const ojson schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", std::move(any_of)}}}};
  c.text = schema.dump();
  return c;
}

}  // namespace seam
