// Encoding speed of the tokenizer.json implementation on one core, printed
// (never asserted: machines differ). The text is $SEAM_TOKENIZER_BENCH_TEXT
// when set -- the same file tools/make_tokenizer_refs.py --bench-text timed
// HF tokenizers on; then the ids must also equal HF's (token count and FNV-1a
// hash from tests/data/tokenizers/hf_bench.json). Without it, a generated
// English-like text is used.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

using nlohmann::json;

// Deterministic English-like text: common words, sentences, paragraphs.
std::string generated_text(size_t n_bytes) {
  static const char* kWords[] = {
      "the", "of", "and", "to", "in", "is", "was", "that", "for", "it", "with", "as", "his", "on", "be", "at",
      "by", "had", "are", "but", "from", "or", "have", "an", "they", "which", "one", "you", "were", "her", "all",
      "she", "there", "would", "their", "we", "him", "been", "has", "when", "who", "will", "more", "no", "if",
      "out", "so", "said", "what", "up", "its", "about", "into", "than", "them", "can", "only", "other", "new",
      "some", "could", "time", "these", "two", "may", "then", "do", "first", "any", "my", "now", "such", "like",
      "our", "over", "man", "me", "even", "most", "made", "after", "also", "did", "many", "before", "must",
      "through", "back", "years", "where", "much", "your", "way", "well", "down", "should", "because", "each",
      "just", "those", "people", "how", "too", "little", "state", "good", "very", "make", "world", "still",
      "own", "see", "men", "work", "long", "get", "here", "between", "both", "life", "being", "under", "never",
      "day", "same", "another", "know", "while", "last", "might", "us", "great", "old", "year", "off", "come",
      "since", "against", "go", "came", "right", "used", "take", "three", "window", "cursor", "command",
      "buffer", "option", "function", "example", "character", "insert", "delete", "search", "pattern"};
  const size_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  uint64_t state = 12345;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  std::string out;
  out.reserve(n_bytes + 64);
  while (out.size() < n_bytes) {
    const int n_sentence_words = 5 + next() % 15;
    for (int i = 0; i < n_sentence_words; ++i) {
      std::string w = kWords[(next() % n_words) * (next() % n_words) / n_words];  // skewed to common words
      if (i == 0) w[0] = static_cast<char>(std::toupper(w[0]));
      if (next() % 50 == 0) w = std::to_string(next() % 10000);
      out += w;
      out += i + 1 == n_sentence_words ? "." : (next() % 12 == 0 ? ", " : " ");
    }
    out += next() % 6 == 0 ? "\n\n" : " ";
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string fnv1a_ids(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xFF;
      h *= 0x100000001B3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TEST(TokenizerSpeed, EncodeMegabytesPerSecond) {
  const char* path = std::getenv("SEAM_TOKENIZER_BENCH_TEXT");
  const std::string text = path ? test::read_file(path) : generated_text(4'000'000);
  ASSERT_FALSE(text.empty()) << "cannot read " << (path ? path : "");
  const json hf = json::parse(test::read_file(std::string(SEAM_SOURCE_DIR) + "/tests/data/tokenizers/hf_bench.json"));
  const std::string data = std::string(SEAM_SOURCE_DIR) + "/tests/data/tokenizers/";
  const std::vector<std::pair<std::string, std::string>> tokenizers = {
      {"llama3-style", test::shared_dir() + "/tokenizers/llama3-style"},
      {"qwen2-style", data + "qwen2-style"},
      {"gpt2-style", data + "gpt2-style"},
      {"llama3-ignore-merges", data + "llama3-ignore-merges"}};
  std::printf("text: %s, %zu bytes\n", path ? path : "generated English-like text", text.size());
  for (const auto& [name, dir] : tokenizers) {
    auto tok = load_tokenizer(dir);
    // Wall time, and this thread's CPU time: on a busy machine the latter
    // still says what one core does.
    double best_wall_s = 1e30, best_cpu_s = 1e30;
    std::vector<int32_t> ids;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = thread_cpu_seconds();
      ids = tok->encode(text, false);
      best_cpu_s = std::min(best_cpu_s, thread_cpu_seconds() - c0);
      best_wall_s = std::min(best_wall_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const std::string hash = fnv1a_ids(ids);
    std::printf("seam %-22s encode(whole text) %7.2f MB/s wall, %7.2f MB/s of thread CPU time  %zu tokens  fnv %s\n",
                name.c_str(), text.size() / best_wall_s / 1e6, text.size() / best_cpu_s / 1e6, ids.size(),
                hash.c_str());
    // The same file HF timed: the ids must be HF's.
    for (const json& r : hf.at("results")) {
      if (r.at("tokenizer") != name || r.at("bytes").get<size_t>() != text.size() || !path) continue;
      EXPECT_EQ(ids.size(), r.at("n_tokens").get<size_t>()) << name;
      EXPECT_EQ(hash, r.at("ids_fnv1a64").get<std::string>()) << name;
      std::printf("     HF tokenizers %s on the GPU machine: %.2f MB/s (ids identical)\n", name.c_str(),
                  r.at("encode_whole_mb_s").get<double>());
    }
  }
}

}  // namespace
}  // namespace seam
