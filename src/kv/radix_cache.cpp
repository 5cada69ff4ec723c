#include "kv/radix_cache.h"

#include <algorithm>
#include <queue>

#include "core/error.h"

namespace seam {

RadixCache::RadixCache(SlotAllocator& slots, bool enabled) : slots_(slots), enabled_(enabled) {
  root_.lock_ref = 1;  // the root is never evicted
}

int RadixCache::match_prefix(const int32_t* tokens, int n, std::vector<int32_t>& out, RadixNode** node) {
  RadixNode* cur = &root_;
  int matched = 0;
  ++clock_;
  while (enabled_ && matched < n) {
    auto it = cur->children.find(tokens[matched]);
    if (it == cur->children.end()) break;
    RadixNode* child = it->second.get();
    size_t k = 0;
    while (k < child->key.size() && matched + int(k) < n && child->key[k] == tokens[matched + int(k)]) ++k;
    if (k < child->key.size()) child = split(child, k);  // partial match: cut the edge at k
    child->last_access = clock_;
    out.insert(out.end(), child->slots.begin(), child->slots.end());
    matched += int(k);
    cur = child;
  }
  *node = cur;
  return matched;
}

RadixNode* RadixCache::split(RadixNode* node, size_t at) {
  // A new node takes the upper part [0, at) between node and its parent; node keeps
  // [at, end) and its children. Node keeps its identity because requests hold it as
  // their locked prefix end: unlock(node) must still walk node, then the new upper
  // part, then the ancestors. (Splitting the other way -- node as the upper part, a
  // new lower child with a copy of node's lock count -- left that copy locked forever
  // once the holder unlocked, and the upper part unlocked above a locked child:
  // counted evictable, never evicted. The soak caught the scheduler spinning on it.)
  // Every lock through node passes through the upper part: it takes node's count.
  RadixNode* parent = node->parent;
  auto slot = parent->children.find(node->key[0]);
  SEAM_ASSERT(slot != parent->children.end() && slot->second.get() == node, "radix cache: split of a detached node");
  auto upper = std::make_unique<RadixNode>();
  upper->key.assign(node->key.begin(), node->key.begin() + long(at));
  upper->slots.assign(node->slots.begin(), node->slots.begin() + long(at));
  upper->parent = parent;
  upper->lock_ref = node->lock_ref;
  upper->last_access = node->last_access;
  node->key.erase(node->key.begin(), node->key.begin() + long(at));
  node->slots.erase(node->slots.begin(), node->slots.begin() + long(at));
  node->parent = upper.get();
  RadixNode* u = upper.get();
  u->children[node->key[0]] = std::move(slot->second);
  slot->second = std::move(upper);
  return u;
}

void RadixCache::lock(RadixNode* node) {
  for (RadixNode* n = node; n != nullptr; n = n->parent) ++n->lock_ref;
}

void RadixCache::unlock(RadixNode* node) {
  for (RadixNode* n = node; n != nullptr; n = n->parent) {
    SEAM_ASSERT(n->lock_ref > 0, "radix cache: unlock of an unlocked node");
    --n->lock_ref;
  }
}

void RadixCache::insert(const int32_t* tokens, int n, const int32_t* slots) {
  if (!enabled_) {
    slots_.free(slots, size_t(n));
    return;
  }
  ++clock_;
  RadixNode* cur = &root_;
  int at = 0;
  while (at < n) {
    auto it = cur->children.find(tokens[at]);
    if (it == cur->children.end()) {
      auto leaf = std::make_unique<RadixNode>();
      leaf->key.assign(tokens + at, tokens + n);
      leaf->slots.assign(slots + at, slots + n);
      leaf->parent = cur;
      leaf->last_access = clock_;
      n_cached_ += n - at;
      cur->children[tokens[at]] = std::move(leaf);
      return;
    }
    RadixNode* child = it->second.get();
    size_t k = 0;
    while (k < child->key.size() && at + int(k) < n && child->key[k] == tokens[at + int(k)]) ++k;
    if (k < child->key.size()) child = split(child, k);
    // The tree already holds these tokens: free our copies unless they are the same slots.
    for (size_t j = 0; j < k; ++j)
      if (child->slots[j] != slots[at + int(j)]) slots_.free(&slots[at + int(j)], 1);
    child->last_access = clock_;
    at += int(k);
    cur = child;
  }
}

void RadixCache::collect_evictable(RadixNode* node, std::vector<RadixNode*>& out) const {
  for (auto& [_, c] : node->children) {
    if (c->children.empty()) {
      if (c->lock_ref == 0) out.push_back(c.get());
    } else {
      collect_evictable(c.get(), out);
    }
  }
}

int RadixCache::evict(int n_slots) {
  if (!enabled_ || n_slots <= 0) return 0;
  auto older = [](RadixNode* a, RadixNode* b) { return a->last_access > b->last_access; };
  std::priority_queue<RadixNode*, std::vector<RadixNode*>, decltype(older)> heap(older);
  std::vector<RadixNode*> leaves;
  collect_evictable(&root_, leaves);
  for (RadixNode* l : leaves) heap.push(l);
  int freed = 0;
  while (freed < n_slots && !heap.empty()) {
    RadixNode* leaf = heap.top();
    heap.pop();
    slots_.free(leaf->slots);
    freed += int(leaf->slots.size());
    n_cached_ -= int(leaf->slots.size());
    RadixNode* parent = leaf->parent;
    parent->children.erase(leaf->key[0]);  // destroys leaf
    if (parent != &root_ && parent->children.empty() && parent->lock_ref == 0) heap.push(parent);
  }
  return freed;
}

int RadixCache::count_evictable(const RadixNode* node) const {
  int n = 0;
  for (const auto& [_, c] : node->children) {
    if (c->lock_ref == 0) n += int(c->slots.size());
    n += count_evictable(c.get());
  }
  return n;
}

int RadixCache::n_evictable_tokens() const { return count_evictable(&root_); }

}  // namespace seam
