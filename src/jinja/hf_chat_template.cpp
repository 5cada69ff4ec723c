#include "jinja/hf_chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace seam::jinja {

namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SEAM_CHECK(in.good(), path, ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A special token in tokenizer_config.json: a string, or an AddedToken dict with "content".
std::optional<std::string> special_token(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  throw Error(std::string("tokenizer_config.json: \"") + key + "\" must be a string or an object with \"content\"");
}

// chat_template.json, where transformers' processors (multimodal models: Gemma 3, ...) keep
// their template: {"chat_template": str}; nullopt when the file is absent or holds none.
std::optional<std::string> processor_template(const std::string& dir) {
  const std::string path = dir + "/chat_template.json";
  if (!std::filesystem::is_regular_file(path)) return std::nullopt;
  const json j = json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
  SEAM_CHECK(j.is_object(), path, ": expected a JSON object {\"chat_template\": ...}");
  auto ct = j.find("chat_template");
  if (ct == j.end() || ct->is_null()) return std::nullopt;
  SEAM_CHECK(ct->is_string(), path, ": \"chat_template\" must be a string");
  return ct->get<std::string>();
}

}  // namespace

ChatRequest ChatRequest::from_json(const nlohmann::ordered_json& j) {
  SEAM_CHECK(j.is_object(), "expected a JSON object");
  ChatRequest r;
  auto m = j.find("messages");
  SEAM_CHECK(m != j.end() && m->is_array(), "\"messages\" must be an array of messages");
  for (const auto& msg : *m) SEAM_CHECK(msg.is_object(), "\"messages\" must hold objects, got ", msg.dump());
  r.messages = *m;
  if (auto t = j.find("tools"); t != j.end() && !t->is_null()) {
    SEAM_CHECK(t->is_array(), "\"tools\" must be an array or null");
    r.tools = *t;
  }
  if (auto k = j.find("kwargs"); k != j.end() && !k->is_null()) {
    SEAM_CHECK(k->is_object(), "\"kwargs\" must be an object of template variables");
    for (const char* reserved : {"messages", "tools", "add_generation_prompt"})
      SEAM_CHECK(!k->contains(reserved), "\"kwargs\" must not set \"", reserved, "\" (it is a field of its own)");
    r.kwargs = *k;
  }
  if (auto d = j.find("documents"); d != j.end() && !d->is_null()) {
    SEAM_CHECK(d->is_array(), "\"documents\" must be an array or null");
    r.documents = *d;
  } else if (auto kd = r.kwargs.find("documents"); kd != r.kwargs.end()) {
    r.documents = *kd;  // transformers passes kwargs["documents"] as documents
  }
  if (auto g = j.find("add_generation_prompt"); g != j.end() && !g->is_null()) {
    SEAM_CHECK(g->is_boolean(), "\"add_generation_prompt\" must be true or false");
    r.add_generation_prompt = g->get<bool>();
  }
  return r;
}

HfChatTemplate HfChatTemplate::from_text(const std::string& text, std::optional<std::string> bos_token,
                                         std::optional<std::string> eos_token, const Options& options) {
  HfChatTemplate t;
  t.templates_.emplace("", Template::parse(text, options));
  t.sources_.emplace("", text);
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  return t;
}

HfChatTemplate HfChatTemplate::from_folder(const std::string& dir, const std::string& override_spec,
                                           const Options& options) {
  HfChatTemplate t;
  json config = json::object();
  const std::string config_path = dir + "/tokenizer_config.json";
  if (std::filesystem::is_regular_file(config_path)) {
    try {
      config = json::parse(read_file(config_path));
    } catch (const json::exception& e) {
      throw Error(config_path + ": not valid JSON: " + e.what());
    }
    SEAM_CHECK(config.is_object(), config_path, ": expected a JSON object");
  }
  t.bos_token_ = special_token(config, "bos_token");
  t.eos_token_ = special_token(config, "eos_token");

  std::map<std::string, std::string> named;
  if (std::filesystem::is_regular_file(dir + "/chat_template.jinja")) {
    named[""] = read_file(dir + "/chat_template.jinja");
  } else if (auto ct = config.find("chat_template"); ct != config.end() && !ct->is_null()) {
    if (ct->is_string()) {
      named[""] = ct->get<std::string>();
    } else {
      SEAM_CHECK(ct->is_array(), config_path, ": \"chat_template\" must be a string or a list of {name, template}");
      for (const json& e : *ct) {
        SEAM_CHECK(e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("template") &&
                       e["template"].is_string(),
                   config_path, ": each \"chat_template\" entry must be {\"name\": str, \"template\": str}");
        named[e["name"].get<std::string>()] = e["template"].get<std::string>();
      }
    }
  } else if (auto processor = processor_template(dir)) {
    named[""] = *processor;
  }
  if (!override_spec.empty()) {
    if (std::filesystem::is_regular_file(override_spec)) {
      named = {{"", read_file(override_spec)}};
    } else {
      auto it = named.find(override_spec);
      SEAM_CHECK(it != named.end() && !override_spec.empty(), "--chat-template ", override_spec,
                 ": neither a file nor a named template of ", config_path);
      named = {{"", it->second}};
    }
  }
  SEAM_CHECK(!named.empty(), dir, ": no chat template (neither chat_template.jinja, \"chat_template\" in ",
             "tokenizer_config.json nor chat_template.json); give one with --chat-template FILE");
  for (const auto& [name, text] : named) {
    try {
      t.templates_.emplace(name, Template::parse(text, options));
    } catch (const TemplateError& e) {
      throw Error("chat template" + (name.empty() ? std::string() : " '" + name + "'") + ": " + e.what());
    }
    t.sources_.emplace(name, text);
  }
  return t;
}

bool HfChatTemplate::folder_has_template(const std::string& dir) {
  if (std::filesystem::is_regular_file(dir + "/chat_template.jinja")) return true;
  const std::string config_path = dir + "/tokenizer_config.json";
  if (std::filesystem::is_regular_file(config_path)) {
    const json config = json::parse(read_file(config_path), nullptr, /*allow_exceptions=*/false);
    if (config.is_object()) {
      auto ct = config.find("chat_template");
      if (ct != config.end() && !ct->is_null()) return true;
    }
  }
  try {
    return processor_template(dir).has_value();
  } catch (const Error&) {
    return true;  // a chat_template.json that is not {"chat_template": str}: from_folder says so
  }
}

std::string HfChatTemplate::all_sources() const {
  std::string all;
  for (const auto& [_, text] : sources_) all += text;
  return all;
}

const Template& HfChatTemplate::select(const ChatRequest& request) const {
  if (templates_.size() == 1) return templates_.begin()->second;
  // transformers: "tool_use" when tools are given and it exists, else "default".
  if (!request.tools.is_null())
    if (auto it = templates_.find("tool_use"); it != templates_.end()) return it->second;
  auto it = templates_.find("default");
  SEAM_CHECK(it != templates_.end(),
             "the model has several chat templates and none named \"default\"; pick one with --chat-template NAME");
  return it->second;
}

const std::string& HfChatTemplate::source_for(const ChatRequest& request) const {
  const Template* chosen = &select(request);
  for (const auto& [name, t] : templates_)
    if (&t == chosen) return sources_.at(name);
  return sources_.begin()->second;
}

std::string HfChatTemplate::render(const ChatRequest& request) const {
  std::vector<std::pair<std::string, Value>> vars;
  // Order matters only for who wins a clash: the special tokens first, the
  // request's kwargs over them, the named arguments last (as transformers merges them).
  if (bos_token_) vars.emplace_back("bos_token", Value(*bos_token_));
  if (eos_token_) vars.emplace_back("eos_token", Value(*eos_token_));
  for (auto it = request.kwargs.begin(); it != request.kwargs.end(); ++it)
    if (it.key() != "documents") vars.emplace_back(it.key(), Value::from_json(it.value()));
  vars.emplace_back("messages", Value::from_json(request.messages));
  vars.emplace_back("tools", Value::from_json(request.tools));
  vars.emplace_back("documents", Value::from_json(request.documents));
  vars.emplace_back("add_generation_prompt", Value(request.add_generation_prompt));
  return select(request).render(vars);
}

}  // namespace seam::jinja
