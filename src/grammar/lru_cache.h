// A small thread-safe LRU map with a bound on the summed cost of its values:
// the compiled-grammar cache (cost = bytes of a compiled grammar) and the
// per-grammar cache of masks by parser state (cost = bytes of a mask) use it.
#pragma once
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace seam::grammar {

template <typename V>
class LruCache {
 public:
  explicit LruCache(size_t max_cost) : max_cost_(max_cost) {}

  // The value under `key` (now the most recent), or nullptr.
  std::shared_ptr<const V> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(key);
    if (it == index_.end()) {
      ++n_misses_;
      return nullptr;
    }
    ++n_hits_;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  // Inserts (or replaces) and evicts the least recent entries while over budget.
  // A value costing more than the whole budget is not kept.
  void insert(const std::string& key, std::shared_ptr<const V> value, size_t cost) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = index_.find(key); it != index_.end()) {
      cost_ -= it->second->cost;
      order_.erase(it->second);
      index_.erase(it);
    }
    if (cost > max_cost_) return;
    order_.push_front(Entry{key, std::move(value), cost});
    index_[key] = order_.begin();
    cost_ += cost;
    while (cost_ > max_cost_) {
      cost_ -= order_.back().cost;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_.size();
  }
  size_t cost() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cost_;
  }
  size_t n_hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return n_hits_;
  }
  size_t n_misses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return n_misses_;
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const V> value;
    size_t cost;
  };
  mutable std::mutex mu_;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  size_t max_cost_;
  size_t cost_ = 0;
  size_t n_hits_ = 0;
  size_t n_misses_ = 0;
};

}  // namespace seam::grammar
