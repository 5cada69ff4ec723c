#include "backend/gemm_tuning_cache.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/log.h"

namespace seam {

namespace {

namespace fs = std::filesystem;

// 8 words as 128 hex digits; the inverse rejects anything else.
std::string to_hex(const GemmTuningCache::Algo& a) {
  std::string s;
  char buf[17];
  for (uint64_t w : a) {
    std::snprintf(buf, sizeof(buf), "%016" PRIx64, w);
    s += buf;
  }
  return s;
}

bool from_hex(const std::string& s, GemmTuningCache::Algo* a) {
  if (s.size() != 16 * a->size()) return false;
  for (size_t i = 0; i < a->size(); ++i) {
    uint64_t w = 0;
    for (size_t j = 0; j < 16; ++j) {
      const char c = s[i * 16 + j];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      w = w << 4 | uint64_t(d);
    }
    (*a)[i] = w;
  }
  return true;
}

}  // namespace

GemmTuningCache::GemmTuningCache(std::string path, std::string scope)
    : path_(std::move(path)), scope_(std::move(scope)) {
  load();
}

void GemmTuningCache::load() {
  std::ifstream f(path_);
  if (!f) return;  // no file yet: an empty cache
  std::stringstream ss;
  ss << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  // Any shape but the expected one: start empty and replace the file at save().
  auto bad = [&](const char* why) {
    log::warn("gemm autotune cache %s: %s; starting empty (the file is replaced when saved)", path_.c_str(), why);
    scopes_.clear();
    dirty_ = true;
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("format") || j["format"] != kFormat) return bad("another format version");
  if (!j.contains("scopes") || !j["scopes"].is_object()) return bad("no \"scopes\" object");
  for (const auto& [scope, entries] : j["scopes"].items()) {
    if (!entries.is_object()) return bad("a scope that is not an object");
    auto& m = scopes_[scope];
    for (const auto& [key, v] : entries.items()) {
      Entry e;
      if (!v.is_object() || !v.contains("algo") || !v["algo"].is_string() || !from_hex(v["algo"], &e.algo) ||
          !v.contains("us") || !v["us"].is_number())
        return bad("an entry without a 128-hex-digit \"algo\" and a numeric \"us\"");
      e.us = v["us"];
      m[key] = e;
    }
  }
}

const std::map<std::string, GemmTuningCache::Entry>& GemmTuningCache::scope_entries() const {
  static const std::map<std::string, Entry> kEmpty;
  auto it = scopes_.find(scope_);
  return it == scopes_.end() ? kEmpty : it->second;
}

const GemmTuningCache::Entry* GemmTuningCache::find(const std::string& key) const {
  const auto& m = scope_entries();
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

void GemmTuningCache::put(const std::string& key, const Entry& e) {
  scopes_[scope_][key] = e;
  dirty_ = true;
}

bool GemmTuningCache::save() {
  if (!dirty_) return true;
  nlohmann::json scopes = nlohmann::json::object();
  for (const auto& [scope, entries] : scopes_) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [key, e] : entries) m[key] = {{"algo", to_hex(e.algo)}, {"us", e.us}};
    scopes[scope] = std::move(m);
  }
  const nlohmann::json j = {{"format", kFormat}, {"scopes", std::move(scopes)}};
  std::error_code ec;
  const fs::path p(path_);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  // Unique per process: two servers starting together never write the same temporary file.
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(1) << "\n";
    f.close();
    if (!f) {
      log::warn("gemm autotune cache: cannot write %s; results not saved", tmp.c_str());
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    log::warn("gemm autotune cache: cannot replace %s (%s); results not saved", path_.c_str(), ec.message().c_str());
    fs::remove(tmp, ec);
    return false;
  }
  dirty_ = false;
  return true;
}

std::string GemmTuningCache::default_path() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  std::string dir = env("SEAM_CACHE_DIR");
  if (dir.empty() && !env("XDG_CACHE_HOME").empty()) dir = env("XDG_CACHE_HOME") + "/seam";
  if (dir.empty() && !env("HOME").empty()) dir = env("HOME") + "/.cache/seam";
  return dir.empty() ? "" : dir + "/gemm_autotune.json";
}

}  // namespace seam
