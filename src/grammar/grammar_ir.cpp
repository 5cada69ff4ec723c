#include "grammar/grammar_ir.h"

#include <algorithm>

#include "core/error.h"

namespace seam::grammar {

namespace {

// Merges overlapping/adjacent ranges, sorted by start.
std::vector<CodeRange> normalize(std::vector<CodeRange> r) {
  std::sort(r.begin(), r.end());
  std::vector<CodeRange> out;
  for (const CodeRange& c : r) {
    if (c.first > c.second) continue;
    if (!out.empty() && c.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, c.second);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Removes the UTF-16 surrogates, which are not valid in UTF-8 text.
std::vector<CodeRange> without_surrogates(const std::vector<CodeRange>& r) {
  std::vector<CodeRange> out;
  for (const CodeRange& c : r) {
    if (c.second < 0xD800 || c.first > 0xDFFF) {
      out.push_back(c);
      continue;
    }
    if (c.first < 0xD800) out.push_back({c.first, 0xD7FF});
    if (c.second > 0xDFFF) out.push_back({0xE000, c.second});
  }
  return out;
}

void append_code_point(std::string& out, char32_t c) {
  if (c == '"' || c == '\\' || c == ']' || c == '[' || c == '^' || c == '-') {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c >= 0x20 && c < 0x7F) {
    out += static_cast<char>(c);
  } else {
    char buf[16];
    if (c <= 0xFF)
      snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c));
    else if (c <= 0xFFFF)
      snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
    else
      snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
    out += buf;
  }
}

}  // namespace

Expr empty() { return Expr{}; }

Expr literal(std::string utf8) {
  if (utf8.empty()) return empty();
  Expr e;
  e.kind = Expr::Kind::kLiteral;
  e.text = std::move(utf8);
  return e;
}

Expr char_class(std::vector<CodeRange> ranges, bool negated) {
  std::vector<CodeRange> r = normalize(std::move(ranges));
  if (negated) {
    std::vector<CodeRange> inv;
    char32_t next = 0;
    for (const CodeRange& c : r) {
      if (c.first > next) inv.push_back({next, c.first - 1});
      next = c.second + 1;
    }
    if (next <= kMaxCodePoint) inv.push_back({next, kMaxCodePoint});
    r = std::move(inv);
  }
  Expr e;
  e.kind = Expr::Kind::kClass;
  e.ranges = without_surrogates(r);
  return e;
}

Expr any_char() { return char_class({{0, kMaxCodePoint}}); }

Expr seq(std::vector<Expr> items) {
  std::vector<Expr> flat;
  for (Expr& i : items) {
    if (i.kind == Expr::Kind::kEmpty) continue;
    if (i.kind == Expr::Kind::kSeq) {
      for (Expr& j : i.items) flat.push_back(std::move(j));
    } else if (i.kind == Expr::Kind::kLiteral && !flat.empty() && flat.back().kind == Expr::Kind::kLiteral) {
      flat.back().text += i.text;  // adjacent literals fuse
    } else {
      flat.push_back(std::move(i));
    }
  }
  if (flat.empty()) return empty();
  if (flat.size() == 1) return std::move(flat[0]);
  Expr e;
  e.kind = Expr::Kind::kSeq;
  e.items = std::move(flat);
  return e;
}

Expr choice(std::vector<Expr> items) {
  if (items.size() == 1) return std::move(items[0]);
  Expr e;
  e.kind = Expr::Kind::kChoice;
  for (Expr& i : items) {
    if (i.kind == Expr::Kind::kChoice) {
      for (Expr& j : i.items) e.items.push_back(std::move(j));
    } else {
      e.items.push_back(std::move(i));
    }
  }
  return e;
}

Expr repeat(Expr body, int min, int max) {
  SEAM_CHECK(min >= 0 && (max == kUnbounded || max >= min), "grammar: repetition {", min, ",", max,
             "} has its bounds the wrong way round");
  if (max == 0 || body.kind == Expr::Kind::kEmpty) return empty();
  if (min == 1 && max == 1) return body;
  Expr e;
  e.kind = Expr::Kind::kRepeat;
  e.items.push_back(std::move(body));
  e.min = min;
  e.max = max;
  return e;
}

Expr star(Expr body) { return repeat(std::move(body), 0, kUnbounded); }
Expr plus(Expr body) { return repeat(std::move(body), 1, kUnbounded); }
Expr optional(Expr body) { return repeat(std::move(body), 0, 1); }

Expr ref(std::string rule_name) {
  Expr e;
  e.kind = Expr::Kind::kRef;
  e.text = std::move(rule_name);
  return e;
}

void Grammar::add_rule(std::string name, Expr body) {
  const auto [it, fresh] = index_.try_emplace(name, rules.size());
  SEAM_CHECK(fresh, "grammar: rule '", name, "' is defined twice");
  rules.push_back({std::move(name), std::move(body)});
}

bool Grammar::has_rule(const std::string& name) const { return index_.count(name) != 0; }

Rule* Grammar::find_rule(const std::string& name) {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &rules[it->second];
}

std::string Grammar::fresh_name(const std::string& stem) const {
  if (!has_rule(stem)) return stem;
  int& i = next_suffix_[stem];  // suffixes below it are taken (names are never removed)
  for (i = std::max(i, 1);; ++i) {
    std::string n = stem + "_" + std::to_string(i);
    if (!has_rule(n)) return n;
  }
}

std::string to_ebnf(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kEmpty:
      return "\"\"";
    case Expr::Kind::kLiteral: {
      std::string out = "\"";
      for (unsigned char c : e.text) {
        if (c == '"' || c == '\\') {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\x%02X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
      return out + "\"";
    }
    case Expr::Kind::kClass: {
      std::string out = "[";
      for (const CodeRange& r : e.ranges) {
        append_code_point(out, r.first);
        if (r.second != r.first) {
          out += '-';
          append_code_point(out, r.second);
        }
      }
      return out + "]";
    }
    case Expr::Kind::kSeq:
    case Expr::Kind::kChoice: {
      std::string out = "(";
      for (size_t i = 0; i < e.items.size(); ++i) {
        if (i) out += e.kind == Expr::Kind::kSeq ? " " : " | ";
        out += to_ebnf(e.items[i]);
      }
      return out + ")";
    }
    case Expr::Kind::kRepeat: {
      std::string out = to_ebnf(e.items[0]);
      if (e.min == 0 && e.max == kUnbounded) return out + "*";
      if (e.min == 1 && e.max == kUnbounded) return out + "+";
      if (e.min == 0 && e.max == 1) return out + "?";
      // Appended piece by piece: `"{" + std::string&&` trips GCC 12's -Wrestrict false positive.
      out += '{';
      out += std::to_string(e.min);
      if (e.max != e.min) {
        out += ',';
        if (e.max != kUnbounded) out += std::to_string(e.max);
      }
      out += '}';
      return out;
    }
    case Expr::Kind::kRef:
      return e.text;
  }
  return {};
}

std::string to_ebnf(const Grammar& g) {
  std::string out;
  for (const Rule& r : g.rules) out += r.name + " ::= " + to_ebnf(r.body) + "\n";
  return out;
}

}  // namespace seam::grammar
