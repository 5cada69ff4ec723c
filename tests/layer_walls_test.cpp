// The layer walls (docs/architecture.md "Layers"): which folders of src/ each folder may include.
// The table below is the rule; this test checks (1) every `#include "<folder>/..."` in src/
// against it, (2) that the server reaches the engine only through its face, and (3) that the link
// graph CMake built (build/layer_deps.txt, written by cmake/seam_layers.cmake) grants no layer
// more than the table. Widening a wall therefore takes a change here, in the open.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// layer -> the layers its code may include (besides itself). Lowest first.
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"core", {}},
      {"api", {"core"}},
      {"tokenizer", {"core"}},
      {"backend", {"core"}},
      {"kv", {"backend", "core"}},
      {"model", {"backend", "kv", "core"}},
      {"graph", {"backend", "core"}},
      {"runtime", {"graph", "model", "kv", "backend", "api", "core"}},
      // The scheduler builds ForwardBatch (runtime/forward_batch.h) from host-only KV bookkeeping
      // (kv/slot_allocator.h, kv/radix_cache.h); it names no backend and owns no device state.
      {"scheduler", {"runtime", "kv", "api", "core"}},
      // The structured-output grammar engine: JSON Schema / regex / EBNF -> token masks over the
      // tokenizer's vocabulary.
      {"grammar", {"tokenizer", "core"}},
      // The engine compiles constraints and holds the per-request matchers (grammar/); runtime/
      // and scheduler/ never see grammar/: the runner gets the masks through a host callback.
      {"engine", {"scheduler", "runtime", "model", "kv", "graph", "backend", "grammar", "tokenizer", "api", "core"}},
      {"jinja", {"core"}},
      {"http", {"core"}},
      {"server", {"engine", "api", "tokenizer", "jinja", "http", "core"}},
      {"bench_serving", {"core"}},
      {"cli", {"server", "bench_serving", "engine", "runtime", "scheduler", "model", "kv", "graph", "backend",
               "tokenizer", "jinja", "api", "core"}},
  };
  return table;
}

// Headers of a layer that a layer above may include; a layer missing here shows all its headers.
// The server sees the engine through engine/engine.h (and engine_config.h, what it is built from).
const std::map<std::string, std::set<std::string>>& faces() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"engine", {"engine/engine.h", "engine/engine_config.h"}},
  };
  return table;
}

// The layers a face restriction applies to (the CLI may use the benchmarking face too).
bool face_applies(const std::string& from) { return from == "server"; }

const fs::path& src_dir() {
  static const fs::path p = fs::path(SEAM_SOURCE_DIR) / "src";
  return p;
}

struct Include {
  std::string file;    // relative to src/
  int line = 0;
  std::string header;  // as written
};

std::vector<Include> project_includes(const fs::path& layer_dir) {
  static const std::regex re(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::vector<Include> out;
  for (const auto& e : fs::recursive_directory_iterator(layer_dir)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
    std::ifstream in(e.path());
    std::string text;
    int n = 0;
    while (std::getline(in, text)) {
      ++n;
      std::smatch m;
      if (std::regex_search(text, m, re))
        out.push_back({fs::relative(e.path(), src_dir()).string(), n, m[1].str()});
    }
  }
  return out;
}

TEST(LayerWalls, EveryFolderOfSrcIsALayerOfTheTable) {
  for (const auto& e : fs::directory_iterator(src_dir()))
    if (e.is_directory())
      EXPECT_TRUE(allowed().count(e.path().filename().string()))
          << "src/" << e.path().filename().string() << " is in no row of the layer table";
}

TEST(LayerWalls, NoIncludeCrossesAWall) {
  int n_checked = 0;
  for (const auto& [layer, ok] : allowed()) {
    const fs::path dir = src_dir() / layer;
    if (!fs::exists(dir)) continue;
    for (const Include& inc : project_includes(dir)) {
      const size_t slash = inc.header.find('/');
      if (slash == std::string::npos) continue;  // a sibling header, same folder
      const std::string target = inc.header.substr(0, slash);
      if (!allowed().count(target)) continue;    // not a layer (e.g. a subfolder path)
      ++n_checked;
      if (target == layer) continue;
      EXPECT_TRUE(ok.count(target)) << "src/" << inc.file << ":" << inc.line << " includes \"" << inc.header
                                    << "\": " << layer << "/ may not include " << target << "/";
      if (face_applies(layer) && faces().count(target))
        EXPECT_TRUE(faces().at(target).count(inc.header))
            << "src/" << inc.file << ":" << inc.line << " includes \"" << inc.header << "\": " << layer
            << "/ sees " << target << "/ only through its face";
    }
  }
  EXPECT_GT(n_checked, 100) << "the scan found too few includes: is SEAM_SOURCE_DIR right?";
}

TEST(LayerWalls, TheLinkGraphGrantsNoMoreThanTheTable) {
  std::ifstream in(SEAM_LAYER_DEPS_FILE);
  ASSERT_TRUE(in) << "no " << SEAM_LAYER_DEPS_FILE << " (written by cmake/seam_layers.cmake)";
  std::string line;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    ASSERT_NE(colon, std::string::npos) << line;
    const std::string layer = line.substr(0, colon);
    seen.insert(layer);
    ASSERT_TRUE(allowed().count(layer)) << "CMake builds a layer the table lacks: " << layer;
    std::istringstream deps(line.substr(colon + 1));
    std::string dep;
    while (deps >> dep)
      EXPECT_TRUE(allowed().at(layer).count(dep)) << "CMake links " << layer << " to " << dep
                                                  << ", which the table does not allow";
  }
  for (const auto& [layer, ok] : allowed()) EXPECT_TRUE(seen.count(layer)) << "CMake builds no library for " << layer;
}

}  // namespace
