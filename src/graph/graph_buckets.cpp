#include "graph/graph_buckets.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace seam {

namespace {
std::vector<int> finish(std::vector<int> v, int max_value) {
  v.erase(std::remove_if(v.begin(), v.end(), [&](int b) { return b > max_value || b < 1; }), v.end());
  if (max_value >= 1) v.push_back(max_value);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}
}  // namespace

std::vector<int> default_decode_buckets(int max_bs) {
  std::vector<int> v = {1, 2, 4, 8, 12};
  for (int b = 16; b <= 256; b += 8) v.push_back(b);
  for (int b = 272; b <= 512; b += 16) v.push_back(b);
  for (int b = 544; b <= max_bs; b += 32) v.push_back(b);
  return finish(v, max_bs);
}

std::vector<int> default_piecewise_buckets(int max_tokens) {
  std::vector<int> v;
  for (int b = 4; b <= 32; b += 4) v.push_back(b);
  for (int b = 48; b <= 256; b += 16) v.push_back(b);
  for (int b = 288; b <= 512; b += 32) v.push_back(b);
  for (int b = 576; b <= 1024; b += 64) v.push_back(b);
  for (int b = 1280; b <= 4096; b += 256) v.push_back(b);
  for (int b = 4608; b <= max_tokens; b += 512) v.push_back(b);
  return finish(v, max_tokens);
}

int bucket_for(const std::vector<int>& ascending, int n) {
  auto it = std::lower_bound(ascending.begin(), ascending.end(), n);
  return it == ascending.end() ? 0 : *it;
}

std::vector<int> parse_bucket_list(const std::string& text, const char* flag) {
  std::vector<int> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t used = 0;
    int b = 0;
    try {
      b = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    SEAM_CHECK(used == item.size() && b >= 1, flag, ": '", item, "' is not a positive integer");
    v.push_back(b);
  }
  SEAM_CHECK(!v.empty(), flag, ": empty list");
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace seam
