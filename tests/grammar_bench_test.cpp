// A micro-benchmark of the grammar engine (prints, asserts only sanity):
// compile time per schema and host mask time per token (median, p99): every
// mask computed (no state-mask cache), a first walk (cache filling) and the
// same walk again (cache warm).
// Quick by default (the 4000-token llama3-style vocabulary, a few schemas);
// SEAM_GRAMMAR_BENCH=1 runs the whole suite also on a synthetic 128K-token
// vocabulary (llama3-style tokens and pairs of them: Llama-3's size); SEAM_GRAMMAR_BENCH_ONLY=<name>
// one schema; SEAM_GRAMMAR_BENCH_NO_BANDS=1 without count_band.h's shared masks.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>

#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

using clock_type = std::chrono::steady_clock;

const char* kSchemas[][2] = {
    {"flat", R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "email":{"type":"string","format":"email"}},"required":["name","age","email"]})"},
    {"nested", R"({"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string"},"maxItems":5}},"required":["id","tags"]},
      "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{2}\\d{4}$"},
      "qty":{"type":"integer","minimum":1,"maximum":99},"price":{"type":"number","minimum":0}},"required":["sku","qty","price"]}},
      "status":{"enum":["open","closed","pending"]}},"required":["user","items","status"]})"},
    {"recursive", R"({"$defs":{"n":{"type":"object","properties":{"v":{"type":"string"},"kids":{"type":"array",
      "items":{"$ref":"#/$defs/n"}}},"required":["v","kids"]}},"$ref":"#/$defs/n"})"},
    {"json_object", ""},
    // pydantic's HttpUrl: a format beside a length bound (the pattern times a character count, regex_length.h).
    {"httpurl", R"({"type":"object","properties":{"url":{"type":"string","format":"uri","minLength":1,
      "maxLength":2083}},"required":["url"]})"},
};

std::shared_ptr<const TokenVocabulary> synthetic_vocab(size_t n) {
  const TokenVocabulary& base = *test_vocab("llama3-style").vocab;
  std::set<std::string> seen;
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) {
    bytes.push_back(std::string(1, static_cast<char>(b)));
    seen.insert(bytes.back());
  }
  for (int32_t id : base.sorted_ids())
    if (seen.insert(base.bytes(id)).second) bytes.push_back(base.bytes(id));
  std::mt19937 rng(5);
  const auto& ids = base.sorted_ids();
  while (bytes.size() < n - 1) {
    std::string t = base.bytes(ids[rng() % ids.size()]) + base.bytes(ids[rng() % ids.size()]);
    if (t.size() <= 16 && seen.insert(t).second) bytes.push_back(std::move(t));
  }
  bytes.push_back("<eos>");
  std::vector<bool> special(bytes.size(), false);
  special.back() = true;
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(special),
                                                 std::vector<int32_t>{static_cast<int32_t>(n - 1)});
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void bench(const std::string& vocab_name, std::shared_ptr<const TokenVocabulary> vocab, size_t n_schemas,
           int n_samples) {
  const char* only = std::getenv("SEAM_GRAMMAR_BENCH_ONLY");  // one schema by name (and n_schemas ignored)
  for (size_t i = 0; i < (only ? std::size(kSchemas) : n_schemas); ++i) {
    if (only && std::string(only) != kSchemas[i][0]) continue;
    Constraint c{*kSchemas[i][1] ? ConstraintKind::kJsonSchema : ConstraintKind::kJsonObject, kSchemas[i][1], {}};
    // SEAM_GRAMMAR_BENCH_NO_BANDS=1: without count_band.h's shared masks (their before / after).
    CompileOptions options;
    options.share_count_band_masks = std::getenv("SEAM_GRAMMAR_BENCH_NO_BANDS") == nullptr;
    const auto t0 = clock_type::now();
    auto g = std::make_shared<const CompiledGrammar>(constraint_grammar(c), vocab, options);
    const double compile_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    // The same grammar without a state-mask cache: every mask computed.
    CompileOptions no_cache = options;
    no_cache.state_mask_cache_bytes = 0;
    auto g_uncached = std::make_shared<const CompiledGrammar>(constraint_grammar(c), vocab, no_cache);
    std::vector<double> cold_us, warm_us, uncached_us;
    std::mt19937 rng(11);
    for (int s = 0; s < n_samples; ++s) {
      // A walk: record the tokens, then time each step's mask with the cache cold and warm.
      std::vector<int32_t> walk;
      {
        GrammarMatcher m(g);
        std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
        std::vector<int32_t> ids;
        for (int step = 0; step < 120 && !m.is_terminated(); ++step) {
          const auto a = clock_type::now();
          m.fill_next_token_bitmask(w.data());
          cold_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - a).count());
          ids = allowed_ids(w.data(), vocab->vocab_size());
          ASSERT_FALSE(ids.empty());
          const int32_t id = ids[rng() % ids.size()];
          ASSERT_TRUE(m.accept_token(id));
          walk.push_back(id);
        }
      }
      for (auto* times : {&warm_us, &uncached_us}) {
        GrammarMatcher m(times == &warm_us ? g : g_uncached);
        std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
        for (int32_t id : walk) {
          const auto a = clock_type::now();
          m.fill_next_token_bitmask(w.data());
          times->push_back(std::chrono::duration<double, std::micro>(clock_type::now() - a).count());
          ASSERT_TRUE(m.accept_token(id));
        }
      }
    }
    printf(
        "[grammar bench] vocab %-14s schema %-11s compile %8.2f ms (%zu byte positions; after the walks %zu stack-top "
        "masks, %.1f MB) | "
        "mask/token uncached: median %7.1f us p99 %8.1f us | first walk: median %6.1f us p99 %8.1f us | "
        "warm cache: median %5.2f us p99 %6.2f us (%zu steps)\n",
        vocab_name.c_str(), kSchemas[i][0], compile_ms, g->n_byte_positions(), g->n_stack_top_masks(),
        static_cast<double>(g->memory_bytes()) / 1e6, percentile(uncached_us, 0.5), percentile(uncached_us, 0.99),
        percentile(cold_us, 0.5), percentile(cold_us, 0.99), percentile(warm_us, 0.5), percentile(warm_us, 0.99),
        cold_us.size());
  }
}

TEST(GrammarBench, CompileAndMaskTimes) {
  const bool full = std::getenv("SEAM_GRAMMAR_BENCH") != nullptr;
  bench("llama3-style", test_vocab("llama3-style").vocab, full ? std::size(kSchemas) : 2, full ? 8 : 2);
  if (full) {
    const auto t0 = clock_type::now();
    const auto big = synthetic_vocab(128256);
    printf("[grammar bench] synthetic vocabulary of %d tokens built in %.0f ms\n", big->vocab_size(),
           std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    bench("synthetic-128K", big, std::size(kSchemas), 8);
  }
}

}  // namespace
}  // namespace seam::grammar::test
