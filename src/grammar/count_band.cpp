#include "grammar/count_band.h"

#include <algorithm>
#include <map>

namespace seam::grammar {

namespace {

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
  // Length-bounded patterns: each family's band states by count (rule ids); every state of a family
  // is of it (a band state's successor may lie past the band).
  std::vector<std::map<int, uint32_t>> bands;
  for (const GrammarProgram::BandState& s : program.band_states) {
    if (s.family >= bands.size()) bands.resize(size_t(s.family) + 1);
    family[s.rule] = int(s.family);
    if (s.count >= s.min_len && int64_t(s.count) <= int64_t(s.band_hi) - max_token_bytes)
      bands[s.family][s.count] = s.rule;
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
