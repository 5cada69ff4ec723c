#include "grammar/grammar_program.h"

#include <map>
#include <unordered_map>

#include "core/error.h"

namespace seam::grammar {

namespace {

using Seq = std::vector<Element>;
using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;  // one per byte of a sequence

int encoded_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void encode(char32_t c, uint8_t* out) {
  const int n = encoded_length(c);
  if (n == 1) {
    out[0] = static_cast<uint8_t>(c);
    return;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    c >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | c);
}

// Splits [lo, hi] (same encoded length) into ranges whose UTF-8 forms are a
// product of per-byte ranges (the method of Rust's regex-syntax Utf8Sequences).
void utf8_sequences(char32_t lo, char32_t hi, std::vector<ByteRanges>& out) {
  const int n = encoded_length(lo);
  if (encoded_length(hi) != n) {
    static constexpr char32_t kEnds[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    utf8_sequences(lo, kEnds[n - 1], out);
    utf8_sequences(kEnds[n - 1] + 1, hi, out);
    return;
  }
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  ByteRanges r;
  for (int i = 0; i < n; ++i) r.push_back({a[i], b[i]});
  out.push_back(std::move(r));
}

class Lowerer {
 public:
  explicit Lowerer(const Grammar& g) : g_(g) {}

  GrammarProgram run() {
    for (const Rule& r : g_.rules) {
      rule_ids_[r.name] = static_cast<uint32_t>(p_.rule_names.size());
      p_.rule_names.push_back(r.name);
      p_.rule_alternatives.emplace_back();
    }
    const auto root = rule_ids_.find(g_.root);
    SEAM_CHECK(root != rule_ids_.end(), "grammar: there is no rule '", g_.root, "' to start from");
    p_.root_rule = root->second;
    for (size_t i = 0; i < g_.rules.size(); ++i) {
      const Expr& body = g_.rules[i].body;
      std::vector<Seq> alts;
      if (body.kind == Expr::Kind::kChoice) {
        for (const Expr& a : body.items) alts.push_back(lower_seq(a, g_.rules[i].name));
      } else {
        alts.push_back(lower_seq(body, g_.rules[i].name));
      }
      set_alternatives(static_cast<uint32_t>(i), alts);
    }
    check_left_recursion();
    lower_band_states();
    return std::move(p_);
  }

 private:
  uint32_t byte_set_index(const ByteSet& s) {
    for (size_t i = 0; i < p_.byte_sets.size(); ++i)
      if (p_.byte_sets[i] == s) return static_cast<uint32_t>(i);
    p_.byte_sets.push_back(s);
    return static_cast<uint32_t>(p_.byte_sets.size() - 1);
  }
  Element bytes(const ByteSet& s) { return {Element::Kind::kBytes, byte_set_index(s)}; }
  Element call(uint32_t rule) { return {Element::Kind::kRef, rule}; }

  uint32_t new_rule(const std::string& name) {
    p_.rule_names.push_back(name);
    p_.rule_alternatives.emplace_back();
    return static_cast<uint32_t>(p_.rule_names.size() - 1);
  }

  void set_alternatives(uint32_t rule, const std::vector<Seq>& alts) {
    for (const Seq& s : alts) {
      p_.rule_alternatives[rule].push_back(static_cast<uint32_t>(p_.elements.size()));
      p_.elements.insert(p_.elements.end(), s.begin(), s.end());
      p_.elements.push_back({Element::Kind::kEnd, 0});
    }
    SEAM_CHECK(p_.elements.size() <= kMaxProgramElements, "grammar: too large (over ", kMaxProgramElements,
               " elements after expanding repetitions)");
  }

  Seq lower_seq(const Expr& e, const std::string& owner) {
    Seq out;
    emit(e, owner, out);
    return out;
  }

  // One element standing for `e` (a call to an auxiliary rule unless e is one byte set or call).
  Element unit(const Expr& e, const std::string& owner) {
    Seq s = lower_seq(e, owner);
    if (s.size() == 1) return s[0];
    const uint32_t r = new_rule(owner + "#group");
    set_alternatives(r, {s});
    return call(r);
  }

  void emit(const Expr& e, const std::string& owner, Seq& out) {
    switch (e.kind) {
      case Expr::Kind::kEmpty:
        return;
      case Expr::Kind::kLiteral:
        for (unsigned char c : e.text) {
          ByteSet s;
          s.set(c);
          out.push_back(bytes(s));
        }
        return;
      case Expr::Kind::kClass:
        emit_class(e, owner, out);
        return;
      case Expr::Kind::kSeq:
        for (const Expr& i : e.items) emit(i, owner, out);
        return;
      case Expr::Kind::kChoice: {
        std::vector<Seq> alts;
        for (const Expr& i : e.items) alts.push_back(lower_seq(i, owner));
        const uint32_t r = new_rule(owner + "#choice");
        set_alternatives(r, alts);
        out.push_back(call(r));
        return;
      }
      case Expr::Kind::kRepeat:
        emit_repeat(e, owner, out);
        return;
      case Expr::Kind::kRef: {
        const auto it = rule_ids_.find(e.text);
        SEAM_CHECK(it != rule_ids_.end(), "grammar: rule '", owner, "' refers to undefined rule '", e.text, "'");
        out.push_back(call(it->second));
        return;
      }
    }
  }

  void emit_class(const Expr& e, const std::string& owner, Seq& out) {
    ByteSet ascii;
    bool any_ascii = false;
    std::vector<ByteRanges> multi;
    for (const CodeRange& r : e.ranges) {
      std::vector<ByteRanges> seqs;
      utf8_sequences(r.first, r.second, seqs);
      for (ByteRanges& s : seqs) {
        if (s.size() == 1) {
          ascii.set_range(s[0].first, s[0].second);
          any_ascii = true;
        } else {
          multi.push_back(std::move(s));
        }
      }
    }
    if (multi.empty()) {
      // An empty class matches nothing: a byte set with no bytes.
      out.push_back(bytes(ascii));
      return;
    }
    const std::string key = to_ebnf(e);
    auto it = class_rules_.find(key);
    if (it == class_rules_.end()) {
      std::vector<Seq> alts;
      if (any_ascii) alts.push_back({bytes(ascii)});
      for (const ByteRanges& s : multi) {
        Seq q;
        for (const auto& [lo, hi] : s) {
          ByteSet b;
          b.set_range(lo, hi);
          q.push_back(bytes(b));
        }
        alts.push_back(std::move(q));
      }
      const uint32_t r = new_rule(owner + "#class");
      set_alternatives(r, alts);
      it = class_rules_.emplace(key, r).first;
    }
    out.push_back(call(it->second));
  }

  // The grammar's band facts by rule id (names resolved here, families numbered in order of first use).
  void lower_band_states() {
    std::unordered_map<std::string, uint32_t> families;
    p_.band_states.reserve(g_.count_band_states.size());
    for (const CountBandState& s : g_.count_band_states) {
      const auto rule = rule_ids_.find(s.rule);
      SEAM_ASSERT(rule != rule_ids_.end(), "a count band state names the rule '", s.rule, "', which is not there");
      const auto family = families.try_emplace(s.family, uint32_t(families.size())).first->second;
      p_.band_states.push_back({rule->second, family, s.count, s.min_len, s.band_hi});
    }
  }

  void emit_repeat(const Expr& e, const std::string& owner, Seq& out) {
    const Element u = unit(e.items[0], owner);
    SEAM_CHECK(e.min <= kMaxRepeatCount && e.max <= kMaxRepeatCount, "grammar: repetition {", e.min, ",", e.max,
               "} is over the limit of ", kMaxRepeatCount);
    for (int i = 0; i < e.min; ++i) out.push_back(u);
    if (e.max == kUnbounded) {
      // S ::= u S | ""  (right-recursive: the matcher runs the call to S as a tail call)
      const uint32_t s = new_rule(owner + "#repeat");
      set_alternatives(s, {{u, call(s)}, {}});
      out.push_back(call(s));
      return;
    }
    // O_1 ::= u | "";  O_k ::= u O_{k-1} | ""
    uint32_t prev = 0;
    std::vector<uint32_t> chain;
    for (int k = 1; k <= e.max - e.min; ++k) {
      const uint32_t o = new_rule(owner + "#repeat");
      if (k == 1)
        set_alternatives(o, {{u}, {}});
      else
        set_alternatives(o, {{u, call(prev)}, {}});
      prev = o;
      chain.push_back(o);
    }
    if (chain.size() > 1) p_.repeat_chains.push_back(std::move(chain));
    if (e.max > e.min) out.push_back(call(prev));
  }

  // Both passes are linear in the program and iterate (no recursion on the grammar's shape): a
  // request's grammar of 100,000 rules each calling the next overflowed the stack of the
  // recursive search this replaced, and a chain of nullable rules took a pass per rule.
  void check_left_recursion() {
    const size_t n = p_.rule_names.size();
    // Nullable rules by a worklist: each alternative keeps a cursor at its first element not yet
    // known to be nullable and waits on that element's rule; a rule found nullable moves the
    // cursors waiting on it.
    std::vector<char> nullable(n, 0);
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> waiting(n);  // rule -> (owner, cursor)
    std::vector<uint32_t> found;
    auto advance = [&](uint32_t owner, uint32_t q) {
      while (p_.elements[q].kind == Element::Kind::kRef && nullable[p_.elements[q].arg]) ++q;
      if (p_.elements[q].kind == Element::Kind::kEnd) {
        if (!nullable[owner]) nullable[owner] = 1, found.push_back(owner);
      } else if (p_.elements[q].kind == Element::Kind::kRef) {
        waiting[p_.elements[q].arg].emplace_back(owner, q);
      }  // a byte element: this alternative is never empty
    };
    for (uint32_t r = 0; r < n; ++r)
      for (uint32_t pos : p_.rule_alternatives[r]) advance(r, pos);
    while (!found.empty()) {
      const uint32_t s = found.back();
      found.pop_back();
      std::vector<std::pair<uint32_t, uint32_t>> w = std::move(waiting[s]);
      for (const auto& [owner, q] : w) advance(owner, q + 1);
    }
    // Edges r -> s where s is called with only nullable elements before it.
    std::vector<std::vector<uint32_t>> edges(n);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t pos : p_.rule_alternatives[r]) {
        for (uint32_t q = pos; p_.elements[q].kind == Element::Kind::kRef; ++q) {
          edges[r].push_back(p_.elements[q].arg);
          if (!nullable[p_.elements[q].arg]) break;
        }
      }
    }
    // A cycle among those edges is left recursion: depth-first search with an explicit stack.
    std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge to follow)
    for (uint32_t root = 0; root < n; ++root) {
      if (color[root] != 0) continue;
      color[root] = 1;
      path.emplace_back(root, 0);
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == edges[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t s = edges[r][next++];
        if (color[s] == 1) {
          std::string cycle;  // the cycle's first 8 rules (a hostile one may have 100,000)
          int shown = 0;
          bool on = false;
          for (const auto& [x, unused] : path) {
            if (x == s) on = true;
            if (on && shown++ < 8) cycle += p_.rule_names[x] + " -> ";
          }
          if (shown > 8) cycle += "... -> ";
          cycle += p_.rule_names[s];
          const bool repeat = p_.rule_names[s].find("#repeat") != std::string::npos;
          SEAM_CHECK(false, "grammar: ",
                     repeat ? "a repeated expression can match the empty string" : "left recursion is not supported",
                     " (", cycle, ")");
        }
        if (color[s] == 0) {
          color[s] = 1;
          path.emplace_back(s, 0);  // `r` / `next` may dangle past this point
        }
      }
    }
  }

  const Grammar& g_;
  GrammarProgram p_;
  std::unordered_map<std::string, uint32_t> rule_ids_;
  std::map<std::string, uint32_t> class_rules_;
};

}  // namespace

GrammarProgram lower_grammar(const Grammar& g) { return Lowerer(g).run(); }

}  // namespace seam::grammar
