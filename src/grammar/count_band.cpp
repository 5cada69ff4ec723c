#include "grammar/count_band.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <string_view>

namespace seam::grammar {

namespace {

struct BandedState {
  std::string_view stem;
  long long position = 0, count = 0, min_len = 0, band_hi = 0;
};

// Parses "<stem>#b<position>.<count>.<min_len>.<band_hi>"; false for any other name.
bool parse_banded(std::string_view name, BandedState& s) {
  const size_t at = name.rfind("#b");
  if (at == std::string_view::npos) return false;
  s.stem = name.substr(0, at);
  const char* p = name.data() + at + 2;
  const char* end = name.data() + name.size();
  long long* fields[] = {&s.position, &s.count, &s.min_len, &s.band_hi};
  for (int i = 0; i < 4; ++i) {
    const auto r = std::from_chars(p, end, *fields[i]);
    if (r.ec != std::errc() || (i < 3 ? (r.ptr == end || *r.ptr != '.') : r.ptr != end)) return false;
    p = r.ptr + (i < 3 ? 1 : 0);
  }
  return true;
}

// The element count of the alternative starting at `start` (through its kEnd).
size_t alt_length(const GrammarProgram& g, uint32_t start) {
  size_t n = 0;
  while (g.elements[start + n].kind != Element::Kind::kEnd) ++n;
  return n + 1;
}

// Whether rules a and b are laid out alike: the same alternatives, element by element the same
// kinds and byte sets, and calls to the same rule or to two rules of one family (family[r]: the
// band or chain a rule belongs to, -1 for none).
bool same_layout(const GrammarProgram& g, const std::vector<int>& family, uint32_t a, uint32_t b) {
  const auto& alts_a = g.rule_alternatives[a];
  const auto& alts_b = g.rule_alternatives[b];
  if (alts_a.size() != alts_b.size()) return false;
  for (size_t i = 0; i < alts_a.size(); ++i) {
    const size_t n = alt_length(g, alts_a[i]);
    if (alt_length(g, alts_b[i]) != n) return false;
    for (size_t k = 0; k < n; ++k) {
      const Element& x = g.elements[alts_a[i] + k];
      const Element& y = g.elements[alts_b[i] + k];
      if (x.kind != y.kind) return false;
      if (x.kind == Element::Kind::kBytes && !(g.byte_sets[x.arg] == g.byte_sets[y.arg])) return false;
      if (x.kind == Element::Kind::kRef && x.arg != y.arg && (family[x.arg] < 0 || family[x.arg] != family[y.arg]))
        return false;
    }
  }
  return true;
}

// Points every position of rule r at the same place in rule canon.
void alias_rule(const GrammarProgram& g, uint32_t r, uint32_t canon, std::vector<uint32_t>& alias) {
  if (alias.empty()) {
    alias.resize(g.elements.size());
    for (uint32_t p = 0; p < alias.size(); ++p) alias[p] = p;
  }
  const auto& alts = g.rule_alternatives[r];
  const auto& canon_alts = g.rule_alternatives[canon];
  for (size_t i = 0; i < alts.size(); ++i) {
    const size_t n = alt_length(g, alts[i]);
    for (size_t k = 0; k < n; ++k) alias[alts[i] + k] = uint32_t(canon_alts[i] + k);
  }
}

}  // namespace

std::vector<uint32_t> count_band_aliases(const GrammarProgram& program, int max_token_bytes) {
  const size_t n_rules = program.rule_names.size();
  std::vector<int> family(n_rules, -1);
  // Length-bounded patterns: (stem, position) -> the band's states by count (rule ids); every state of
  // the (stem, position) is of its family (a band state's successor may lie past the band).
  std::map<std::pair<std::string_view, long long>, int> family_of;
  std::vector<std::map<long long, uint32_t>> bands;
  for (uint32_t r = 0; r < n_rules; ++r) {
    BandedState s;
    if (!parse_banded(program.rule_names[r], s)) continue;
    const auto [it, fresh] = family_of.try_emplace({s.stem, s.position}, int(bands.size()));
    if (fresh) bands.emplace_back();
    family[r] = it->second;
    if (s.count >= s.min_len && s.count <= s.band_hi - max_token_bytes) bands[size_t(it->second)][s.count] = r;
  }
  // Bounded repetitions: O_k with k > T units left never runs out within a token of T bytes (a unit
  // takes at least one byte: a repeated unit that can match nothing is refused at lowering).
  const int chain_base = int(bands.size());
  for (size_t c = 0; c < program.repeat_chains.size(); ++c)
    for (uint32_t r : program.repeat_chains[c]) family[r] = chain_base + int(c);

  std::vector<uint32_t> alias;
  for (const auto& by_count : bands) {
    if (by_count.size() < 2) continue;
    const uint32_t canon = by_count.begin()->second;  // the band's lowest count
    for (auto it = std::next(by_count.begin()); it != by_count.end(); ++it)
      if (same_layout(program, family, it->second, canon)) alias_rule(program, it->second, canon, alias);
  }
  const size_t t = size_t(std::max(max_token_bytes, 0));
  for (const auto& chain : program.repeat_chains) {
    if (chain.size() < t + 2) continue;  // O_{T+1} and at least one above it
    const uint32_t canon = chain[t];       // O_{T+1}
    for (size_t k = t + 1; k < chain.size(); ++k)
      if (same_layout(program, family, chain[k], canon)) alias_rule(program, chain[k], canon, alias);
  }
  return alias;
}

}  // namespace seam::grammar
