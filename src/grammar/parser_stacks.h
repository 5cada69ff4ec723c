// The matcher's parse state: a set of parse stacks over a GrammarProgram, each
// stack a node of a persistent tree (StackArena: node = top position + parent
// node, hash-consed, so equal stacks are one id and sharing tails costs nothing).
// A stack's top is always a byte element (expand() runs the calls and returns
// eagerly); the root rule's end is the flag can_end. StackStepper advances a
// state by one byte -- what both token acceptance and the mask walk are made of.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_program.h"

namespace seam::grammar {

inline constexpr int32_t kNoParent = -1;    // the root rule's caller: its end is can_end
inline constexpr int32_t kOpenParent = -2;  // an unknown caller: its end is `escaped`

struct StackNode {
  uint32_t pos;    // a position in the program
  int32_t parent;  // the caller's stack (its top is the return position), or kNoParent/kOpenParent
};

class StackArena {
 public:
  int32_t get(uint32_t pos, int32_t parent);
  const StackNode& operator[](int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  size_t size() const { return nodes_.size(); }
  // Drops every node made after size() was `mark` (scratch nodes of a mask walk).
  void truncate(size_t mark);

 private:
  static uint64_t key(uint32_t pos, int32_t parent) {
    return (static_cast<uint64_t>(pos) << 32) | static_cast<uint32_t>(parent);
  }
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, int32_t> index_;
};

struct ParserState {
  std::vector<int32_t> stacks;  // sorted, unique; every top is a byte element
  bool can_end = false;         // the root rule may end here
  bool escaped = false;         // a stack ended into a kOpenParent (precomputation only)
  bool alive() const { return !stacks.empty() || can_end || escaped; }
  void clear() {
    stacks.clear();
    can_end = escaped = false;
  }
};

class StackStepper {
 public:
  StackStepper(const GrammarProgram& program, StackArena& arena) : p_(program), arena_(arena) {}

  // The state at the start of rule `rule` called from `parent`.
  ParserState start(uint32_t rule, int32_t parent);
  // The state of the single stack (pos, parent) after expanding its calls.
  ParserState at(uint32_t pos, int32_t parent);
  // Moves every stack whose top accepts `b` past it; returns out.alive().
  bool advance(const ParserState& in, uint8_t b, ParserState& out);
  // Feeds bytes one by one; false (and `state` dead) as soon as one is rejected.
  bool advance_all(ParserState& state, std::string_view bytes);

  // A stack as its positions from the top down: a canonical key across arenas.
  void append_key(int32_t stack, std::string& key) const;

 private:
  void expand(int32_t node, ParserState& out);
  void finish(ParserState& out);

  const GrammarProgram& p_;
  StackArena& arena_;
  std::vector<uint32_t> seen_;  // [node] the generation that expanded it
  std::vector<int32_t> work_;   // expand's work list (kept: no allocation a call)
  uint32_t generation_ = 0;
  ParserState tmp_;
};

}  // namespace seam::grammar
