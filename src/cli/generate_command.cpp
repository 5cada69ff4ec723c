// seam generate: offline generation. All prompts of one call run batched
// together through the engine loop.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/follower_node.h"
#include "cli/engine_flags.h"
#include "cli/request_json.h"
#include "core/log.h"
#include "engine/engine.h"

namespace seam::cli {

int generate_command(int argc, char** argv) {
  CLI::App app("seam generate: offline generation", "seam generate");
  EngineFlags flags;
  flags.add_to(app);
  std::vector<std::string> prompts;
  std::string prompts_file;
  SamplingParams defaults;
  bool as_json = false, print_stats = false;
  app.add_option("--prompt", prompts, "a prompt (repeatable)");
  app.add_option("--prompts-file", prompts_file,
                 "JSON lines: {prompt | input_ids, max_new_tokens, temperature, ..., json_schema | regex | ebnf | "
                 "choice}");
  app.add_option("--max-new-tokens", defaults.max_new_tokens, "default max new tokens");
  app.add_option("--temperature", defaults.temperature, "default temperature (0 = greedy)");
  app.add_option("--top-p", defaults.top_p, "default top-p");
  app.add_option("--top-k", defaults.top_k, "default top-k (-1 = off)");
  app.add_option("--min-p", defaults.min_p, "default min-p");
  app.add_option("--repetition-penalty", defaults.repetition_penalty, "default repetition penalty");
  app.add_option("--frequency-penalty", defaults.frequency_penalty, "default frequency penalty");
  app.add_option("--presence-penalty", defaults.presence_penalty, "default presence penalty");
  app.add_option("--seed", defaults.seed, "default per-request seed");
  app.add_flag("--ignore-eos", defaults.ignore_eos, "do not stop at EOS");
  app.add_flag("--json", as_json, "one JSON line per prompt: index, prompt_ids, output_ids, text, finish_reason");
  app.add_flag("--stats", print_stats, "print engine stats as one JSON line on stderr at the end");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(!prompts.empty() || !prompts_file.empty(), "give --prompt TEXT or --prompts-file FILE");
  SEAM_CHECK(prompts.empty() || prompts_file.empty(), "give --prompt or --prompts-file, not both");

  // Parse the whole input before loading the model: bad input fails fast.
  std::vector<RequestSpec> specs;
  std::vector<std::string> names;  // how errors name each prompt
  if (!prompts_file.empty()) {
    std::ifstream in(prompts_file);
    SEAM_CHECK(in.good(), prompts_file, ": cannot open");
    std::string line;
    int line_no = 0, n_lines = 0, n_bad_lines = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ++n_lines;
      names.push_back(prompts_file + ":" + std::to_string(line_no));
      try {
        specs.push_back(parse_request_line(line, defaults, names.back()));
      } catch (const Error& e) {  // every bad line is reported, then nothing runs
        log::error("seam generate: %s", e.what());
        ++n_bad_lines;
      }
    }
    if (n_bad_lines > 0) {
      log::error("seam generate: %d of %d lines of %s are bad; nothing was generated", n_bad_lines, n_lines,
                 prompts_file.c_str());
      return 1;
    }
    SEAM_CHECK(!specs.empty(), prompts_file, ": no prompts");
  } else {
    for (auto& p : prompts) {
      names.push_back("prompt " + std::to_string(specs.size() + 1));
      specs.push_back(RequestSpec{p, {}, false, defaults});
    }
  }

  const EngineConfig config = flags.finish();
  if (config.node_rank > 0) return run_follower_node(config);  // node 0 runs the prompts
  Engine engine(config);
  // Every prompt is checked before any runs, and each bad one is reported on
  // its own line. Tokenization stops past the context, so a huge prompt is
  // refused without being tokenized in full.
  const size_t max_ids = size_t(std::max(engine.max_context() - 1, 0));
  std::vector<std::vector<int32_t>> ids(specs.size());
  std::vector<SamplingParams> params;
  int n_bad = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const RequestSpec& s = specs[i];
    params.push_back(s.params);
    try {
      if (s.has_ids) {
        ids[i] = s.input_ids;
      } else {
        std::optional<std::vector<int32_t>> encoded = engine.tokenizer().encode_at_most(s.prompt, true, max_ids);
        SEAM_CHECK(encoded, "the prompt has more than ", max_ids, " tokens; the context length is ",
                   engine.max_context());
        ids[i] = std::move(*encoded);
      }
      engine.check_request(ids[i], s.params);
    } catch (const Error& e) {
      log::error("seam generate: %s: %s", names[i].c_str(), e.what());
      ++n_bad;
    }
  }
  if (n_bad > 0) {
    log::error("seam generate: %d of %zu prompts cannot run; nothing was generated", n_bad, specs.size());
    return 1;
  }
  std::vector<GenerateResult> results = engine.generate(ids, params);
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerateResult& r = results[i];
    if (as_json) {
      nlohmann::json j;
      j["index"] = i;
      j["prompt_ids"] = r.prompt_ids;
      j["output_ids"] = r.output_ids;
      j["text"] = r.text;
      j["finish_reason"] = finish_reason_name(r.finish_reason);
      j["meta"] = {{"queue_time_s", r.queue_time_s}, {"ttft_s", r.ttft_s}, {"e2e_s", r.e2e_s}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << (specs[i].has_ids ? std::string() : specs[i].prompt) << r.text << "\n";
      if (results.size() > 1) std::cout << "\n";
    }
  }
  std::cout.flush();
  if (print_stats) {
    // generate() returns once every output was delivered; the engine counts a request as
    // finished just after its last callback, and publishes stats when idle.
    engine.wait_idle();
    std::cerr << engine.stats().to_json().dump() << std::endl;
  }
  return 0;
}

}  // namespace seam::cli
