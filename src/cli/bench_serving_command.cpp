// seam bench-serving: a load generator against a running OpenAI-compatible
// server, with sglang bench_serving's flags and figures (random dataset,
// Poisson arrivals or a concurrency cap, TTFT / ITL / TPOT / E2E percentiles).
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_serving/bench_metrics.h"
#include "bench_serving/http_client.h"
#include "bench_serving/load_runner.h"
#include "bench_serving/random_dataset.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "model/json_file.h"

namespace seam::cli {

namespace {

// The served model card: its name and (seam's extra field) vocab size.
nlohmann::json fetch_model_card(const HttpTarget& t) {
  HttpClient cli(t.host, t.port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(30, 0);
  auto res = cli.Get("/v1/models");
  SEAM_CHECK(res, "GET http://", t.host, ":", t.port, "/v1/models failed: ", res.error(),
             " (is the server up?)");
  SEAM_CHECK(res->status == 200, "GET /v1/models: HTTP ", res->status, ": ", res->body);
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  SEAM_CHECK(j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
                 j["data"][0].is_object(),
             "GET /v1/models: unexpected body ", res->body.substr(0, 200));
  return j["data"][0];
}

}  // namespace

int bench_serving_command(int argc, char** argv) {
  CLI::App app("seam bench-serving: load generator for an OpenAI-compatible server", "seam bench-serving");
  std::string backend = "seam", host = "127.0.0.1", base_url, dataset = "random", model, tokenizer, output_file;
  int port = 30000;
  RandomDatasetSpec ds;
  ds.vocab_size = 0;
  double request_rate = std::numeric_limits<double>::infinity();
  int max_concurrency = 0, n_warmup = 1;
  app.add_option("--backend", backend, "label recorded in the results (requests always go to /v1/completions)");
  app.add_option("--host", host, "server host");
  app.add_option("--port", port, "server port");
  app.add_option("--base-url", base_url, "http://host:port (overrides --host/--port)");
  app.add_option("--dataset-name", dataset, "random (the only one)");
  app.add_option("--model", model, "the model name sent (default: the server's /v1/models)");
  app.add_option("--tokenizer,--model-path", tokenizer, "model folder whose config.json gives the vocab size");
  app.add_option("--vocab-size", ds.vocab_size, "vocab size for random ids (default: config.json or the server)");
  app.add_option("--num-prompts", ds.n_prompts, "number of requests");
  app.add_option("--random-input-len", ds.input_len, "input tokens per request (upper bound)");
  app.add_option("--random-output-len", ds.output_len, "output tokens per request (upper bound)");
  app.add_option("--random-range-ratio", ds.range_ratio, "lengths are drawn uniformly in [len * ratio, len]");
  app.add_option("--request-rate", request_rate, "requests per second, Poisson arrivals (default inf: all at once)");
  app.add_option("--max-concurrency", max_concurrency, "cap on requests in flight (0: none)");
  app.add_option("--seed", ds.seed, "seed of the dataset and the arrival times");
  app.add_option("--warmup-requests", n_warmup, "requests sent (and not measured) before the run");
  app.add_option("--output-file", output_file, "append the result as one JSON line");
  int logprobs = -1;
  app.add_option("--logprobs", logprobs,
                 "every request asks for \"logprobs\": K (0..20: the sampled token's logprob and K top ones)");
  std::string json_schema_file, extra_request_body;
  app.add_option("--json-schema", json_schema_file,
                 "every request asks for structured output: response_format json_schema with this file's schema "
                 "(e.g. bench/schemas/nested.json)");
  app.add_option("--extra-request-body", extra_request_body,
                 "a JSON object whose members are added to every request (as sglang's flag), e.g. "
                 "'{\"regex\": \"[a-z]+\"}'");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(dataset == "random", "--dataset-name: only 'random' is supported, got '", dataset, "'");
  SEAM_CHECK(max_concurrency >= 0, "--max-concurrency must be >= 0, got ", max_concurrency);
  SEAM_CHECK(request_rate > 0, "--request-rate must be > 0 (inf: all at once), got ", request_rate);
  SEAM_CHECK(n_warmup >= 0, "--warmup-requests must be >= 0, got ", n_warmup);
  std::signal(SIGPIPE, SIG_IGN);

  LoadSpec spec;
  if (!base_url.empty()) {
    spec.target = parse_base_url(base_url);
  } else {
    spec.target.host = host;
    spec.target.port = port;
  }
  spec.request_rate = request_rate;
  spec.max_concurrency = max_concurrency;
  spec.seed = ds.seed;
  SEAM_CHECK(logprobs >= -1 && logprobs <= 20, "--logprobs must be in [0, 20], got ", logprobs);
  spec.logprobs = logprobs;
  if (!extra_request_body.empty()) {
    spec.extra_body = nlohmann::ordered_json::parse(extra_request_body, nullptr, false);
    SEAM_CHECK(spec.extra_body.is_object(), "--extra-request-body must be a JSON object, got: ",
               extra_request_body.substr(0, 200));
  }
  if (!json_schema_file.empty()) {
    std::ifstream in(json_schema_file);
    SEAM_CHECK(in.good(), "--json-schema: cannot read ", json_schema_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, false);
    SEAM_CHECK(schema.is_object(), "--json-schema: ", json_schema_file, " does not hold a JSON Schema object");
    SEAM_CHECK(!spec.extra_body.is_object() || !spec.extra_body.contains("response_format"),
               "--json-schema and --extra-request-body's response_format: one constraint per request");
    if (!spec.extra_body.is_object()) spec.extra_body = nlohmann::ordered_json::object();
    spec.extra_body["response_format"] = {
        {"type", "json_schema"}, {"json_schema", {{"name", "bench"}, {"strict", true}, {"schema", schema}}}};
  }

  const nlohmann::json card = fetch_model_card(spec.target);
  spec.model = model.empty() ? card.value("id", "") : model;
  if (ds.vocab_size == 0 && !tokenizer.empty()) {
    const auto cfg = read_json_file(tokenizer + "/config.json", "config.json");
    SEAM_CHECK(cfg.contains("vocab_size") && cfg["vocab_size"].is_number_integer(), tokenizer,
               "/config.json: no integer vocab_size");
    ds.vocab_size = cfg["vocab_size"].get<int>();
  }
  if (ds.vocab_size == 0 && card.contains("vocab_size") && card["vocab_size"].is_number_integer())
    ds.vocab_size = card["vocab_size"].get<int>();
  SEAM_CHECK(ds.vocab_size > 0, "the vocab size is unknown: pass --tokenizer DIR or --vocab-size N");
  const std::vector<BenchRequest> requests = make_random_dataset(ds);

  for (int i = 0; i < n_warmup; ++i) {
    const RequestRecord w = run_one_request(spec, requests[size_t(i) % requests.size()]);
    SEAM_CHECK(w.success, "the warm-up request failed: ", w.error);
  }
  log::info("seam bench-serving: %zu requests to http://%s:%d (model %s)", requests.size(), spec.target.host.c_str(),
            spec.target.port, spec.model.c_str());
  double duration_s = 0;
  const std::vector<RequestRecord> records = run_load(spec, requests, duration_s);
  const BenchSummary summary = summarize(records, duration_s);

  nlohmann::json run;
  run["backend"] = backend;
  run["dataset_name"] = dataset;
  run["model"] = spec.model;
  run["num_prompts"] = ds.n_prompts;
  run["random_input_len"] = ds.input_len;
  run["random_output_len"] = ds.output_len;
  run["random_range_ratio"] = ds.range_ratio;
  run["request_rate"] = std::isfinite(request_rate) ? nlohmann::json(request_rate) : nlohmann::json("inf");
  run["max_concurrency"] = max_concurrency > 0 ? nlohmann::json(max_concurrency) : nlohmann::json(nullptr);
  run["seed"] = ds.seed;
  run["logprobs"] = logprobs >= 0 ? nlohmann::json(logprobs) : nlohmann::json(nullptr);
  run["json_schema"] = json_schema_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(json_schema_file);
  run["extra_request_body"] = extra_request_body.empty() ? nlohmann::json(nullptr) : nlohmann::json(extra_request_body);
  std::cout << format_table(summary, run);
  const std::string line = summary_json(summary, run).dump();
  std::cout << line << std::endl;
  if (!output_file.empty()) {
    std::ofstream out(output_file, std::ios::app);
    SEAM_CHECK(out.good(), output_file, ": cannot open for appending");
    out << line << "\n";
  }
  if (summary.failed > 0)
    log::warn("seam bench-serving: %d requests failed; first error: %s", summary.failed, summary.first_error.c_str());
  return summary.completed > 0 ? 0 : 1;
}

}  // namespace seam::cli
