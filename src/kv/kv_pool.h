// KvPool: the paged KV cache of every layer, one device allocation sized at
// start-up, plus the request -> slot table (the page table) on the device.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace seam {

struct KvPoolShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int32_t n_slots = 0;     // token slots, slot 0 = scratch
  int max_reqs = 0;        // rows of the page table (one more is the scratch row)
  int max_context = 0;     // columns of the page table
  DType dtype = DType::f32;
};

class KvPool {
 public:
  KvPool(Backend& backend, const KvPoolShape& shape);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  static size_t bytes_per_slot(const KvPoolShape& s) {
    return size_t(2) * s.n_layers * s.n_kv_heads * s.head_dim * dtype_size(s.dtype);
  }

  const KvPoolShape& shape() const { return shape_; }
  Tensor k_cache(int layer) const;  // [n_slots, n_kv_heads, head_dim]
  Tensor v_cache(int layer) const;  // [n_slots, n_kv_heads, head_dim]
  Tensor page_table() const;        // [max_reqs + 1, max_context] i32
  // The row whose every entry is the scratch slot (padded decode rows use it).
  int scratch_row() const { return shape_.max_reqs; }
  // Writes page_table[row][begin .. begin+n) = slots (host -> device).
  void set_slots(int row, int begin, const int32_t* slots, int n);

 private:
  Backend& backend_;
  KvPoolShape shape_;
  void* kv_ = nullptr;          // [n_layers, 2, n_slots, n_kv_heads, head_dim]
  int32_t* page_table_ = nullptr;  // [max_reqs + 1, max_context]
};

}  // namespace seam
