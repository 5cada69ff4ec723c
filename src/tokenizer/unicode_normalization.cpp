#include "tokenizer/unicode_normalization.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer/unicode_nfc_data.h"
#include "tokenizer/utf8.h"

namespace seam::unicode {

namespace {

// Hangul syllable arithmetic (Unicode chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

struct Tables {
  std::unordered_map<char32_t, std::pair<uint32_t, uint32_t>> decomposition;  // cp -> (offset, n)
  std::unordered_map<char32_t, uint8_t> combining_class;
  std::unordered_map<uint64_t, char32_t> composite;  // (first << 32 | second) -> composite
  // Bitmap over the BMP and beyond: 1 when the code point may change under
  // NFC/NFD (has a decomposition, a non-zero class, or composes as a second).
  std::vector<bool> may_change;

  Tables() : may_change(0x110000, false) {
    using namespace unicode_data;
    for (size_t i = 0; i < kCanonicalDecompositionSize;) {
      const char32_t cp = kCanonicalDecomposition[i];
      const uint32_t n = kCanonicalDecomposition[i + 1];
      decomposition[cp] = {static_cast<uint32_t>(i + 2), n};
      may_change[cp] = true;
      i += 2 + n;
    }
    for (size_t i = 0; i + 2 < kCombiningClassRangesSize + 1; i += 3) {
      for (char32_t cp = kCombiningClassRanges[i]; cp <= kCombiningClassRanges[i + 1]; ++cp) {
        combining_class[cp] = static_cast<uint8_t>(kCombiningClassRanges[i + 2]);
        may_change[cp] = true;
      }
    }
    for (size_t i = 0; i + 2 < kPrimaryCompositesSize + 1; i += 3) {
      const uint64_t key = (uint64_t{kPrimaryComposites[i]} << 32) | kPrimaryComposites[i + 1];
      composite[key] = kPrimaryComposites[i + 2];
      may_change[kPrimaryComposites[i + 1]] = true;
    }
    for (char32_t cp = kSBase; cp < kSBase + kSCount; ++cp) may_change[cp] = true;
    for (char32_t cp = kVBase; cp < kVBase + kVCount; ++cp) may_change[cp] = true;  // L+V
    for (char32_t cp = kTBase + 1; cp < kTBase + kTCount; ++cp) may_change[cp] = true;  // LV+T
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

uint8_t ccc(const Tables& t, char32_t cp) {
  auto it = t.combining_class.find(cp);
  return it == t.combining_class.end() ? 0 : it->second;
}

// Normalizes only the regions that can change. A "stable" character (no
// decomposition, class 0, never the second of a composition) is a safe cut:
// nothing before it interacts with anything after it. A region runs from the
// stable character before an unstable run (it may compose with the run) to
// the next stable character; everything else is copied as it is.
template <typename NormalizeRegion>
std::string normalize_unstable_regions(const Tables& t, std::string_view s, NormalizeRegion&& normalize_region) {
  std::string out;
  size_t copied = 0;     // s[0, copied) is in out (or out is not started)
  size_t last_safe = 0;  // start of the last stable character seen
  bool started = false;
  for (size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      last_safe = pos++;
      continue;
    }
    size_t n;
    char32_t cp = utf8::decode_at(s, pos, &n);
    if (!t.may_change[cp]) {
      last_safe = pos;
      pos += n;
      continue;
    }
    const size_t region_start = std::max(last_safe, copied);
    size_t end = pos + n;
    while (end < s.size()) {
      cp = utf8::decode_at(s, end, &n);
      if (!t.may_change[cp]) break;
      end += n;
    }
    if (!started) {
      out.reserve(s.size() + 16);
      started = true;
    }
    out.append(s.substr(copied, region_start - copied));
    out += normalize_region(s.substr(region_start, end - region_start));
    copied = end;
    last_safe = end;
    pos = end;
  }
  if (!started) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

// Full canonical decomposition followed by the canonical ordering algorithm.
std::vector<char32_t> decompose(const Tables& t, std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    size_t n;
    const char32_t cp = utf8::decode_at(s, pos, &n);
    pos += n;
    if (cp >= kSBase && cp < kSBase + kSCount) {
      const int s_index = static_cast<int>(cp - kSBase);
      out.push_back(kLBase + s_index / kNCount);
      out.push_back(kVBase + (s_index % kNCount) / kTCount);
      if (s_index % kTCount != 0) out.push_back(kTBase + s_index % kTCount);
      continue;
    }
    auto it = t.decomposition.find(cp);
    if (it == t.decomposition.end()) {
      out.push_back(cp);
    } else {
      const auto [offset, count] = it->second;
      for (uint32_t i = 0; i < count; ++i)
        out.push_back(unicode_data::kCanonicalDecomposition[offset + i]);
    }
  }
  // Stable sort of every run of non-starters by combining class.
  for (size_t i = 0; i < out.size();) {
    if (ccc(t, out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && ccc(t, out[j]) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j,
                     [&](char32_t a, char32_t b) { return ccc(t, a) < ccc(t, b); });
    i = j;
  }
  return out;
}

std::string to_utf8(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size() * 2);
  for (char32_t cp : cps) utf8::append(out, cp);
  return out;
}

std::string nfd_region(const Tables& t, std::string_view s) { return to_utf8(decompose(t, s)); }

std::string nfc_region(const Tables& t, std::string_view s) {
  std::vector<char32_t> cps = decompose(t, s);
  // Canonical composition: each character joins the last starter unless a
  // character in between blocks it (same or higher class, or a starter).
  size_t n_out = 0;
  long starter = -1;  // index in the output of the last starter
  int last_class = -1;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const int cls = ccc(t, cp);
    if (starter >= 0) {
      const bool blocked = last_class != -1 && (last_class >= cls || last_class == 0);
      if (!blocked) {
        const char32_t first = cps[starter];
        char32_t joined = 0;
        if (first >= kLBase && first < kLBase + kLCount && cp >= kVBase && cp < kVBase + kVCount) {
          joined = kSBase + ((first - kLBase) * kVCount + (cp - kVBase)) * kTCount;
        } else if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
                   cp > kTBase && cp < kTBase + kTCount) {
          joined = first + (cp - kTBase);
        } else {
          auto it = t.composite.find((uint64_t{first} << 32) | cp);
          if (it != t.composite.end()) joined = it->second;
        }
        if (joined != 0) {
          cps[starter] = joined;
          continue;  // cp is consumed; last_class stays as it was
        }
      }
    }
    if (cls == 0) {
      starter = static_cast<long>(n_out);
      last_class = -1;
    } else {
      last_class = cls;
    }
    cps[n_out++] = cp;
  }
  cps.resize(n_out);
  return to_utf8(cps);
}

}  // namespace

std::string nfd(std::string_view s) {
  const Tables& t = tables();
  return normalize_unstable_regions(t, s, [&t](std::string_view r) { return nfd_region(t, r); });
}

std::string nfc(std::string_view s) {
  const Tables& t = tables();
  return normalize_unstable_regions(t, s, [&t](std::string_view r) { return nfc_region(t, r); });
}

}  // namespace seam::unicode
