#include "server/tool_request.h"

#include "core/json_parse.h"
#include "server/api_error.h"
#include "server/tool_choice_constraint.h"

namespace seam {

namespace {

using ojson = nlohmann::ordered_json;

const ojson* find(const ojson& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError wrong(const std::string& key, const std::string& what) { return bad_request("'" + key + "' " + what, key); }

void check_tools(const ojson& tools) {
  if (!tools.is_array()) throw wrong("tools", "must be a list");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ojson& t = tools[i];
    if (!t.is_object()) throw wrong(at, "must be an object");
    const ojson* type = find(t, "type");
    if (!type || *type != "function") throw wrong(at + ".type", "must be \"function\"");
    const ojson* f = find(t, "function");
    if (!f || !f->is_object()) throw wrong(at + ".function", "must be an object");
    const ojson* name = find(*f, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      throw wrong(at + ".function.name", "must be a non-empty string");
    if (const ojson* d = find(*f, "description"); d && !d->is_string())
      throw wrong(at + ".function.description", "must be a string");
    if (const ojson* p = find(*f, "parameters"); p && !p->is_object())
      throw wrong(at + ".function.parameters", "must be an object (a JSON schema)");
  }
}

// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name": X}}
// (X in `name`). Whether X is one of the tools is checked once the tools are read.
std::string read_tool_choice(const ojson& body, std::string& name) {
  const ojson* v = find(body, "tool_choice");
  if (!v) return "auto";
  if (v->is_string()) {
    const std::string c = v->get<std::string>();
    if (c == "none" || c == "auto" || c == "required") return c;
    throw wrong("tool_choice",
                "must be \"none\", \"auto\", \"required\" or a named function, got \"" + c.substr(0, 64) + "\"");
  }
  if (!v->is_object()) throw wrong("tool_choice", "must be a string or an object");
  const ojson* type = find(*v, "type");
  if (!type || *type != "function") throw wrong("tool_choice.type", "must be \"function\"");
  const ojson* f = find(*v, "function");
  if (!f || !f->is_object()) throw wrong("tool_choice.function", "must be an object {\"name\": ...}");
  const ojson* n = find(*f, "name");
  if (!n || !n->is_string() || n->get<std::string>().empty())
    throw wrong("tool_choice.function.name", "must be a non-empty string");
  name = n->get<std::string>();
  return "function";
}

// An assistant message's tool_calls, with string arguments parsed to objects.
ojson read_tool_calls(const ojson& calls, const std::string& at) {
  if (!calls.is_array()) throw wrong(at, "must be a list");
  ojson out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string ck = at + "[" + std::to_string(k) + "]";
    const ojson& c = calls[k];
    if (!c.is_object()) throw wrong(ck, "must be an object");
    if (const ojson* type = find(c, "type"); type && *type != "function") throw wrong(ck + ".type", "must be \"function\"");
    if (const ojson* id = find(c, "id"); id && !id->is_string()) throw wrong(ck + ".id", "must be a string");
    const ojson* f = find(c, "function");
    if (!f || !f->is_object()) throw wrong(ck + ".function", "must be an object");
    const ojson* name = find(*f, "name");
    if (!name || !name->is_string()) throw wrong(ck + ".function.name", "must be a string");
    ojson call = c;
    if (const ojson* args = find(*f, "arguments"); args && args->is_string()) {
      if (json_nesting_depth(args->get<std::string>()) > k_max_json_depth)
        throw wrong(ck + ".function.arguments", "nests deeper than " + std::to_string(k_max_json_depth) + " levels");
      ojson parsed = ojson::parse(args->get<std::string>(), nullptr, false);
      if (parsed.is_discarded())
        throw wrong(ck + ".function.arguments", "must be a JSON object or a string holding one");
      call["function"]["arguments"] = std::move(parsed);
    } else if (args && !args->is_object()) {
      throw wrong(ck + ".function.arguments", "must be a JSON object or a string holding one");
    }
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

void read_chat_tool_fields(const ojson& body, ApiRequest& r) {
  if (const ojson* v = find(body, "chat_template_kwargs")) {
    if (!v->is_object()) throw wrong("chat_template_kwargs", "must be an object");
    r.chat_template_kwargs = *v;
  }
  if (const ojson* v = find(body, "documents")) {
    if (!v->is_array()) throw wrong("documents", "must be a list");
    r.documents = *v;
  }
  if (const ojson* v = find(body, "separate_reasoning")) {
    if (!v->is_boolean()) throw wrong("separate_reasoning", "must be a boolean");
    r.separate_reasoning = v->get<bool>();
  }
  r.tool_choice = read_tool_choice(body, r.tool_choice_name);
  if (const ojson* v = find(body, "tools")) {
    check_tools(*v);
    // tool_choice "none": the model is not asked to call (sglang does not render the tools).
    if (!v->empty() && r.tool_choice != "none") r.tools = *v;
  }
  // A forced call (vLLM's way): the output is constrained to the call's JSON and parsed back into
  // tool calls (forced_tool_calls.h); no --tool-call-parser needed.
  if (r.tool_choice == "required" || r.tool_choice == "function") {
    if (r.tools.is_null())
      throw wrong("tool_choice", std::string("\"") + (r.tool_choice == "required" ? "required" : "a named function") +
                                     "\" needs a non-empty 'tools' list");
    if (r.tool_choice == "function") {
      bool known = false;
      for (const ojson& t : r.tools) known = known || t["function"]["name"] == r.tool_choice_name;
      if (!known)
        throw wrong("tool_choice.function.name",
                    "names no tool of 'tools': \"" + r.tool_choice_name.substr(0, 64) + "\"");
    }
    r.params.constraint = tool_choice_constraint(r.tools, r.tool_choice == "function" ? r.tool_choice_name : "");
  }

  const ojson& messages = body["messages"];
  for (size_t i = 0; i < messages.size() && i < r.messages.size(); ++i) {
    const ojson& m = messages[i];
    ChatMessage& out = r.messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    out.content_null = find(m, "content") == nullptr;
    if (const ojson* calls = find(m, "tool_calls")) {
      if (out.role != "assistant") throw wrong(at + ".tool_calls", "is only allowed in assistant messages");
      out.tool_fields["tool_calls"] = read_tool_calls(*calls, at + ".tool_calls");
    }
    if (const ojson* id = find(m, "tool_call_id")) {
      if (!id->is_string()) throw wrong(at + ".tool_call_id", "must be a string");
      out.tool_fields["tool_call_id"] = *id;
    }
    if (out.role == "tool") {
      if (const ojson* name = find(m, "name")) {
        if (!name->is_string()) throw wrong(at + ".name", "must be a string");
        out.tool_fields["name"] = *name;
      }
    }
    // A null content reaches the template as None only beside tool calls; otherwise "" as always.
    if (!out.tool_fields.contains("tool_calls")) out.content_null = false;
  }
}

}  // namespace seam
