#include "grammar/parser_stacks.h"

#include <algorithm>

namespace seam::grammar {

int32_t StackArena::get(uint32_t pos, int32_t parent) {
  const auto [it, fresh] = index_.try_emplace(key(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent});
  return it->second;
}

void StackArena::truncate(size_t mark) {
  for (size_t i = mark; i < nodes_.size(); ++i) index_.erase(key(nodes_[i].pos, nodes_[i].parent));
  nodes_.resize(std::min(mark, nodes_.size()));
}

// Iterative (an explicit work list, not recursion): a chain of calls as long as the grammar's
// rules, or of returns as deep as the stack, would otherwise be C++ stack depth, and a request's
// grammar of 100,000 rules each calling the next overflowed it. The result is a set (finish
// sorts it), so the visiting order does not matter.
void StackStepper::expand(int32_t start, ParserState& out) {
  work_.clear();
  work_.push_back(start);
  while (!work_.empty()) {
    const int32_t node = work_.back();
    work_.pop_back();
    if (node < 0) {
      if (node == kNoParent)
        out.can_end = true;
      else
        out.escaped = true;
      continue;
    }
    if (seen_.size() <= static_cast<size_t>(node)) seen_.resize(arena_.size() + 64, 0);
    if (seen_[static_cast<size_t>(node)] == generation_) continue;
    seen_[static_cast<size_t>(node)] = generation_;
    const StackNode n = arena_[node];
    const Element& e = p_.elements[n.pos];
    switch (e.kind) {
      case Element::Kind::kBytes:
        out.stacks.push_back(node);
        break;
      case Element::Kind::kEnd:
        // n.parent's top is already the return position.
        work_.push_back(n.parent);
        break;
      case Element::Kind::kRef: {
        // A call right before the end of an alternative is a tail call: it
        // returns where this rule returns, so the stack does not grow.
        const int32_t ret =
            p_.elements[n.pos + 1].kind == Element::Kind::kEnd ? n.parent : arena_.get(n.pos + 1, n.parent);
        for (uint32_t alt : p_.rule_alternatives[e.arg]) work_.push_back(arena_.get(alt, ret));
        break;
      }
    }
  }
}

void StackStepper::finish(ParserState& out) {
  std::sort(out.stacks.begin(), out.stacks.end());
  out.stacks.erase(std::unique(out.stacks.begin(), out.stacks.end()), out.stacks.end());
}

ParserState StackStepper::start(uint32_t rule, int32_t parent) {
  ParserState out;
  ++generation_;
  for (uint32_t alt : p_.rule_alternatives[rule]) expand(arena_.get(alt, parent), out);
  finish(out);
  return out;
}

ParserState StackStepper::at(uint32_t pos, int32_t parent) {
  ParserState out;
  ++generation_;
  expand(arena_.get(pos, parent), out);
  finish(out);
  return out;
}

bool StackStepper::advance(const ParserState& in, uint8_t b, ParserState& out) {
  out.clear();
  ++generation_;
  for (int32_t s : in.stacks) {
    const StackNode n = arena_[s];
    if (!p_.byte_sets[p_.elements[n.pos].arg].test(b)) continue;
    expand(arena_.get(n.pos + 1, n.parent), out);
  }
  finish(out);
  return out.alive();
}

bool StackStepper::advance_all(ParserState& state, std::string_view bytes) {
  for (unsigned char c : bytes) {
    if (!advance(state, c, tmp_)) {
      state.clear();
      return false;
    }
    std::swap(state, tmp_);
  }
  return true;
}

void StackStepper::append_key(int32_t stack, std::string& key) const {
  int32_t s = stack;
  for (; s >= 0; s = arena_[s].parent) {
    const uint32_t pos = arena_[s].pos;
    key.append(reinterpret_cast<const char*>(&pos), sizeof pos);
  }
  key.push_back(s == kOpenParent ? 'o' : ';');
}

}  // namespace seam::grammar
