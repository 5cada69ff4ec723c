#include "grammar/regex_length.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "grammar/json_text.h"

namespace seam::grammar {

namespace {


constexpr long long kHuge = 1LL << 50;  // lengths saturate here: nested counts cannot overflow
long long add_len(long long a, long long b) { return a == kUnbounded || b == kUnbounded ? kUnbounded : std::min(a + b, kHuge); }
long long mul_len(long long a, long long k) {
  if (a == kUnbounded) return k == 0 ? 0 : kUnbounded;
  return a == 0 || k == 0 ? 0 : (a > kHuge / k ? kHuge : a * k);
}

// The Glushkov automaton of the pattern with its unanchored ends as any-character loops: one
// position a character occurrence (counted repeats expanded), `first` the positions a string
// can start with, `last` those it can end with, follow[p] those that can come after p.
// Positions are numbered from 0; atom[p] is the index of p's character class in `atoms`.
class Glushkov {
 public:
  explicit Glushkov(size_t max_positions) : max_positions_(max_positions) {}

  struct Part {
    bool nullable = true;
    std::vector<int> first, last;
  };

  // False when the positions would pass the limit.
  bool build(const RegexAst& ast) {
    Part body = node(ast.root);
    if (overflow_) return false;
    if (!ast.anchored_start) body = concat(any_loop(), std::move(body));
    if (!ast.anchored_end) body = concat(std::move(body), any_loop());
    whole_ = std::move(body);
    return !overflow_;
  }

  const Part& whole() const { return whole_; }
  const std::vector<std::vector<int>>& follow() const { return follow_; }
  const std::vector<int>& atom() const { return atom_; }
  const std::vector<Expr>& atoms() const { return atoms_; }
  size_t n_positions() const { return atom_.size(); }

 private:
  int new_position(int atom_index) {
    if (atom_.size() >= max_positions_) {
      overflow_ = true;
      return -1;
    }
    atom_.push_back(atom_index);
    follow_.emplace_back();
    return int(atom_.size() - 1);
  }

  // Appends; a list grown past twice the positions is deduplicated, so nested stars and
  // alternations cannot grow the lists past O(positions) each.
  void unite(std::vector<int>& into, const std::vector<int>& from) const {
    into.insert(into.end(), from.begin(), from.end());
    if (into.size() > 2 * atom_.size() + 16) {
      std::sort(into.begin(), into.end());
      into.erase(std::unique(into.begin(), into.end()), into.end());
    }
  }
  void link(const std::vector<int>& from, const std::vector<int>& to) {
    for (int p : from) unite(follow_[size_t(p)], to);
  }

  Part concat(Part a, Part b) {
    link(a.last, b.first);
    Part r;
    r.nullable = a.nullable && b.nullable;
    r.first = std::move(a.first);
    if (a.nullable) unite(r.first, b.first);
    r.last = std::move(b.last);
    if (b.nullable) unite(r.last, a.last);
    return r;
  }
  Part alternate(Part a, const Part& b) {
    a.nullable = a.nullable || b.nullable;
    unite(a.first, b.first);
    unite(a.last, b.last);
    return a;
  }
  Part star(Part a) {
    link(a.last, a.first);
    a.nullable = true;
    return a;
  }
  Part any_loop() {
    atoms_.push_back(json_any_string_char());
    const int p = new_position(int(atoms_.size() - 1));
    if (p < 0) return {};
    Part a;
    a.nullable = false;
    a.first = a.last = {p};
    return star(std::move(a));
  }

  Part node(const RegexNode& n) {
    if (overflow_) return {};
    switch (n.kind) {
      case RegexNode::Kind::kChar: {
        auto [it, fresh] = atom_of_.try_emplace(class_key(n.ranges), int(atoms_.size()));
        if (fresh) atoms_.push_back(json_string_char(n.ranges));
        const int p = new_position(it->second);
        if (p < 0) return {};
        Part a;
        a.nullable = false;
        a.first = a.last = {p};
        return a;
      }
      case RegexNode::Kind::kSeq: {
        Part r;  // the empty string
        for (const RegexNode& c : n.items) r = concat(std::move(r), node(c));
        return r;
      }
      case RegexNode::Kind::kAlt: {
        Part r = node(n.items[0]);
        for (size_t i = 1; i < n.items.size(); ++i) r = alternate(std::move(r), node(n.items[i]));
        return r;
      }
      case RegexNode::Kind::kRepeat: {
        // body{m,n} = body^m (body?)^(n-m), body{m,} = body^m body*: fresh positions each copy.
        Part r;
        for (int i = 0; i < n.min && !overflow_; ++i) r = concat(std::move(r), node(n.items[0]));
        if (n.max == kUnbounded) return concat(std::move(r), star(node(n.items[0])));
        for (int i = n.min; i < n.max && !overflow_; ++i) {
          Part opt = node(n.items[0]);
          opt.nullable = true;
          r = concat(std::move(r), std::move(opt));
        }
        return r;
      }
    }
    return {};
  }

  static std::string class_key(const std::vector<CodeRange>& ranges) {
    std::string k;
    for (const CodeRange& r : ranges) k += std::to_string(uint32_t(r.first)) + "-" + std::to_string(uint32_t(r.second)) + ",";
    return k;
  }

  size_t max_positions_;
  bool overflow_ = false;
  Part whole_;
  std::vector<int> atom_;
  std::vector<std::vector<int>> follow_;
  std::vector<Expr> atoms_;
  std::unordered_map<std::string, int> atom_of_;
};

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

LengthRange regex_length_range(const RegexNode& n) {
  switch (n.kind) {
    case RegexNode::Kind::kChar:
      return {1, 1};
    case RegexNode::Kind::kSeq: {
      LengthRange r{0, 0};
      for (const RegexNode& c : n.items) {
        const LengthRange x = regex_length_range(c);
        r.min = add_len(r.min, x.min);
        r.max = add_len(r.max, x.max);
      }
      return r;
    }
    case RegexNode::Kind::kAlt: {
      LengthRange r = regex_length_range(n.items[0]);
      for (size_t i = 1; i < n.items.size(); ++i) {
        const LengthRange x = regex_length_range(n.items[i]);
        r.min = std::min(r.min, x.min);
        r.max = r.max == kUnbounded || x.max == kUnbounded ? kUnbounded : std::max(r.max, x.max);
      }
      return r;
    }
    case RegexNode::Kind::kRepeat: {
      const LengthRange x = regex_length_range(n.items[0]);
      return {mul_len(x.min, n.min), n.max == kUnbounded ? (x.max == 0 ? 0 : kUnbounded) : mul_len(x.max, n.max)};
    }
  }
  return {0, 0};
}

LengthBoundedPattern length_bounded_pattern(const RegexAst& ast, int min_len, int max_len, Grammar& g,
                                            const RegexLengthLimits& limits) {
  LengthBoundedPattern out;
  Glushkov a(limits.max_positions);
  if (!a.build(ast)) {
    out.status = LengthBoundedPattern::Status::kTooLarge;
    out.detail = "the pattern has over " + std::to_string(limits.max_positions) +
                 " character positions once its counted repeats are expanded";
    return out;
  }
  const size_t n_pos = a.n_positions();
  const int start = int(n_pos);  // the virtual position before the first character
  std::vector<std::vector<int>> follow = a.follow();
  follow.push_back(a.whole().first);
  for (auto& f : follow) sort_unique(f);
  std::vector<char> final_pos(n_pos + 1, 0);
  for (int p : a.whole().last) final_pos[size_t(p)] = 1;
  final_pos[size_t(start)] = a.whole().nullable;

  // The count of characters so far, saturated at min_len when there is no upper bound (past
  // min_len every count then behaves alike).
  const bool bounded = max_len != kUnbounded;
  const int cap = bounded ? max_len : min_len;
  auto next_count = [&](int c) { return bounded ? c + 1 : std::min(c + 1, cap); };
  auto key = [&](int p, int c) { return int64_t(p) * (int64_t(cap) + 1) + c; };  // cap may be INT_MAX

  // Forward: the (position, count) pairs reachable from (start, 0) within the bound.
  std::unordered_map<int64_t, int> id;  // key -> state index
  std::vector<std::pair<int, int>> states;
  std::vector<std::vector<int>> succ;  // state -> successor states (one per follow position)
  std::deque<int> todo;
  auto visit = [&](int p, int c) -> int {
    auto [it, fresh] = id.try_emplace(key(p, c), int(states.size()));
    if (fresh) {
      states.emplace_back(p, c);
      succ.emplace_back();
      todo.push_back(it->second);
    }
    return it->second;
  };
  visit(start, 0);
  size_t n_edges = 0;
  while (!todo.empty()) {
    const int s = todo.front();
    todo.pop_front();
    const auto [p, c] = states[size_t(s)];
    if (bounded && c + 1 > max_len) continue;
    for (int q : follow[size_t(p)]) {
      const int t = visit(q, next_count(c));
      succ[size_t(s)].push_back(t);
      if (++n_edges > limits.max_transitions || states.size() > limits.max_states) {
        out.status = LengthBoundedPattern::Status::kTooLarge;
        out.detail = "bounding the pattern's length needs over " +
                     std::to_string(states.size() > limits.max_states ? limits.max_states : limits.max_transitions) +
                     (states.size() > limits.max_states ? " states" : " transitions");
        return out;
      }
    }
  }
  // Backward: the states from which an accepting one (a final position, count >= min_len) is reachable.
  const size_t n_states = states.size();
  std::vector<std::vector<int>> pred(n_states);
  for (size_t s = 0; s < n_states; ++s)
    for (int t : succ[s]) pred[size_t(t)].push_back(int(s));
  std::vector<char> live(n_states, 0);
  std::deque<int> back;
  auto accepting = [&](size_t s) { return final_pos[size_t(states[s].first)] && states[s].second >= min_len; };
  for (size_t s = 0; s < n_states; ++s)
    if (accepting(s)) live[s] = 1, back.push_back(int(s));
  while (!back.empty()) {
    const int t = back.front();
    back.pop_front();
    for (int s : pred[size_t(t)])
      if (!live[size_t(s)]) live[size_t(s)] = 1, back.push_back(s);
  }
  if (!live[0]) {
    out.status = LengthBoundedPattern::Status::kEmpty;
    out.detail = "no string the pattern matches has " + std::to_string(min_len) + ".." +
                 (bounded ? std::to_string(max_len) : std::string("any number of")) + " characters";
    return out;
  }

  // With an upper bound, the count band in which a state behaves as every other state of its position
  // does, for a token of up to T characters (count_band.h): from count min_len on (ending allowed) to
  // max_len - D - T, where D is the most characters any live position still needs to reach a final one.
  // The band's ends go into the grammar's count_band_states, which CompiledGrammar reads once T is known.
  int band_hi = -1;  // max_len - D; -1: no band (no upper bound)
  if (bounded) {
    std::vector<int> dist(n_pos + 1, -1);  // fewest characters from a position to a final one
    std::vector<std::vector<int>> rev(n_pos + 1);
    for (size_t p = 0; p <= n_pos; ++p)
      for (int q : follow[p]) rev[size_t(q)].push_back(int(p));
    std::deque<int> bfs;
    for (size_t p = 0; p <= n_pos; ++p)
      if (final_pos[p]) dist[p] = 0, bfs.push_back(int(p));
    while (!bfs.empty()) {
      const int q = bfs.front();
      bfs.pop_front();
      for (int p : rev[size_t(q)])
        if (dist[size_t(p)] < 0) dist[size_t(p)] = dist[size_t(q)] + 1, bfs.push_back(p);
    }
    const int d_max = *std::max_element(dist.begin(), dist.end());
    band_hi = max_len - d_max;
  }

  // One rule a live state: accept here (the empty alternative) and / or one character of a
  // follow position, then that position's state. Each character class is one shared rule.
  // Names: a fresh stem, then '#' (no front end's fresh names contain '#'): "#c<atom>" a class,
  // "#s<state>" a state; with an upper bound each state also gets a CountBandState (family: the stem
  // and its position).
  const std::string stem = g.fresh_name("strlen");
  auto state_name = [&](int s) { return stem + "#s" + std::to_string(s); };
  std::vector<char> atom_used(a.atoms().size(), 0);
  for (size_t s = 0; s < n_states; ++s) {
    if (!live[s]) continue;
    std::vector<Expr> alts;
    if (accepting(s)) alts.push_back(empty());
    for (int t : succ[s]) {
      if (!live[size_t(t)]) continue;
      const int atom = a.atom()[size_t(states[size_t(t)].first)];
      atom_used[size_t(atom)] = 1;
      alts.push_back(seq({ref(stem + "#c" + std::to_string(atom)), ref(state_name(t))}));
    }
    g.add_rule(state_name(int(s)), choice(std::move(alts)));
    if (band_hi >= 0) {
      const auto [p, c] = states[s];
      g.count_band_states.push_back({state_name(int(s)), stem + "#p" + std::to_string(p), c, min_len, band_hi});
    }
  }
  for (size_t i = 0; i < atom_used.size(); ++i)
    if (atom_used[i]) g.add_rule(stem + "#c" + std::to_string(i), a.atoms()[i]);
  g.add_rule(stem, ref(state_name(0)));  // the stem itself, so fresh_name never hands it out again
  out.expr = ref(stem);
  return out;
}

}  // namespace seam::grammar
