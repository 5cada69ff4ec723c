// RadixCache: the prefix cache. A radix tree over token ids whose nodes own
// the KV slots of their tokens. Requests borrow a cached prefix by locking its
// node (reference count up to the root); unlocked leaves are evicted
// least-recently-used when slots are needed. Disabled, it caches nothing and
// every call is a no-op that frees what it is given.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kv/slot_allocator.h"

namespace seam {

struct RadixNode {
  std::vector<int32_t> key;    // the tokens of this edge
  std::vector<int32_t> slots;  // their KV slots (same length)
  RadixNode* parent = nullptr;
  std::map<int32_t, std::unique_ptr<RadixNode>> children;  // by first token of the child's key
  int lock_ref = 0;
  uint64_t last_access = 0;
};

class RadixCache {
 public:
  RadixCache(SlotAllocator& slots, bool enabled);

  bool enabled() const { return enabled_; }
  // Longest cached prefix of tokens[0..n): appends its slots to `out` and returns
  // its length; *node is the deepest node of the match (root when none).
  int match_prefix(const int32_t* tokens, int n, std::vector<int32_t>& out, RadixNode** node);
  void lock(RadixNode* node);    // node and its ancestors can't be evicted
  void unlock(RadixNode* node);
  // Hands tokens[0..n) with their slots to the tree. Slots of tokens the tree
  // already holds under other slots are freed (duplicates); the rest become the
  // tree's. Disabled: frees every slot.
  void insert(const int32_t* tokens, int n, const int32_t* slots);
  // Frees up to n_slots slots from unlocked leaves, oldest first; returns how many.
  int evict(int n_slots);

  int n_cached_tokens() const { return n_cached_; }
  int n_evictable_tokens() const;

 private:
  RadixNode* split(RadixNode* node, size_t at);  // a new parent takes key[0..at) (returned); node keeps the rest
  void collect_evictable(RadixNode* node, std::vector<RadixNode*>& out) const;
  int count_evictable(const RadixNode* node) const;

  SlotAllocator& slots_;
  bool enabled_;
  RadixNode root_;
  uint64_t clock_ = 0;
  int n_cached_ = 0;
};

}  // namespace seam
