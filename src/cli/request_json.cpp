#include "cli/request_json.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/json_parse.h"

namespace seam::cli {

namespace {

using json = nlohmann::json;

// Every reader checks the type and the range itself: nlohmann's get<T>()
// converts 1e10 to an int (undefined) and 1e300 to an infinite float.
[[noreturn]] void fail(const std::string& where, const char* key, const std::string& what) {
  throw Error(where + ": field '" + key + "' " + what);
}

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t to_int(const json& v, const std::string& where, const char* key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) fail(where, key, std::string("must be an integer, got ") + v.type_name());
  const bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi);
  const int64_t x = too_big ? hi : v.get<int64_t>();
  if (too_big || x < lo || x > hi)
    fail(where, key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return x;
}

void read_int(const json& j, const char* key, int32_t& out, const std::string& where, int64_t lo) {
  if (const json* v = find(j, key)) out = int32_t(to_int(*v, where, key, lo, std::numeric_limits<int32_t>::max()));
}

void read_float(const json& j, const char* key, float& out, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return;
  if (!v->is_number()) fail(where, key, std::string("must be a number, got ") + v->type_name());
  const double x = v->get<double>();
  if (!(std::fabs(x) <= 1e30)) fail(where, key, "is out of range: " + v->dump());
  out = float(x);
}

void read_bool(const json& j, const char* key, bool& out, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return;
  if (!v->is_boolean()) fail(where, key, std::string("must be true or false, got ") + v->type_name());
  out = v->get<bool>();
}

std::vector<int32_t> read_ids(const json& v, const char* key, const std::string& where) {
  if (!v.is_array()) fail(where, key, std::string("must be a list of token ids, got ") + v.type_name());
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const json& x : v) ids.push_back(int32_t(to_int(x, where, key, 0, std::numeric_limits<int32_t>::max())));
  return ids;
}

}  // namespace

void read_sampling_fields(const json& j, SamplingParams& p, const std::string& where) {
  read_int(j, "max_new_tokens", p.max_new_tokens, where, 0);
  read_float(j, "temperature", p.temperature, where);
  read_float(j, "top_p", p.top_p, where);
  read_int(j, "top_k", p.top_k, where, -1);
  read_float(j, "min_p", p.min_p, where);
  read_float(j, "frequency_penalty", p.frequency_penalty, where);
  read_float(j, "presence_penalty", p.presence_penalty, where);
  read_float(j, "repetition_penalty", p.repetition_penalty, where);
  read_bool(j, "ignore_eos", p.ignore_eos, where);
  if (const json* v = find(j, "stop_token_ids")) p.stop_token_ids = read_ids(*v, "stop_token_ids", where);
  read_bool(j, "skip_special_tokens", p.skip_special_tokens, where);
  if (const json* v = find(j, "seed")) {
    // Any 64-bit integer: a negative seed is taken as its two's complement.
    if (!v->is_number_integer()) fail(where, "seed", std::string("must be an integer, got ") + v->type_name());
    p.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
  }
  if (const json* v = find(j, "stop")) {
    if (v->is_string()) {
      p.stop = {v->get<std::string>()};
    } else if (v->is_array()) {
      p.stop.clear();
      for (const json& s : *v) {
        if (!s.is_string()) fail(where, "stop", std::string("must hold strings, got ") + s.type_name());
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      fail(where, "stop", std::string("must be a string or a list of strings, got ") + v->type_name());
    }
  }
  // Structured output, sglang's fields (json_schema: the schema or its text; regex; ebnf) and
  // vLLM's choice (a list of strings); at most one. The engine compiles it at submit. (A schema
  // given as an object is re-serialized with its keys sorted: properties come in that order.)
  const std::pair<const char*, OutputConstraint::Kind> kinds[] = {
      {"json_schema", OutputConstraint::Kind::json_schema},
      {"regex", OutputConstraint::Kind::regex},
      {"ebnf", OutputConstraint::Kind::ebnf},
      {"choice", OutputConstraint::Kind::choice}};
  for (const auto& [key, kind] : kinds) {
    const json* v = find(j, key);
    if (!v) continue;
    if (p.constraint) fail(where, key, "is a second structured-output constraint (" + p.constraint->field + ")");
    OutputConstraint c;
    c.kind = kind;
    c.field = key;
    if (kind == OutputConstraint::Kind::choice) {
      if (!v->is_array()) fail(where, key, std::string("must be a list of strings, got ") + v->type_name());
      c.text = v->dump();
    } else if (v->is_string()) {
      c.text = v->get<std::string>();
    } else if (kind == OutputConstraint::Kind::json_schema && (v->is_object() || v->is_boolean())) {
      c.text = v->dump();
    } else {
      fail(where, key, std::string("must be a string, got ") + v->type_name());
    }
    p.constraint = std::move(c);
  }
}

RequestSpec parse_request_line(const std::string& line, const SamplingParams& defaults, const std::string& where) {
  json j;
  try {
    j = parse_json_document(line);
  } catch (const JsonParseError& e) {
    throw Error(where + ": malformed JSON: " + e.what());
  }
  SEAM_CHECK(j.is_object(), where, ": expected a JSON object");
  RequestSpec s;
  s.params = defaults;
  if (const json* ids = find(j, "input_ids")) {
    s.input_ids = read_ids(*ids, "input_ids", where);
    s.has_ids = true;
  } else {
    const json* prompt = find(j, "prompt");
    SEAM_CHECK(prompt && prompt->is_string(), where, ": needs a string 'prompt' or 'input_ids'");
    s.prompt = prompt->get<std::string>();
  }
  read_sampling_fields(j, s.params, where);
  return s;
}

}  // namespace seam::cli
