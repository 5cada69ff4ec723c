#include "kv/kv_pool.h"

#include <vector>

namespace seam {

KvPool::KvPool(Backend& backend, const KvPoolShape& shape) : backend_(backend), shape_(shape) {
  SEAM_CHECK(shape.n_slots >= 2 && shape.max_reqs >= 1 && shape.max_context >= 1, "invalid KV pool shape");
  kv_ = backend_.alloc(bytes_per_slot(shape) * size_t(shape.n_slots));
  const size_t table_entries = size_t(shape.max_reqs + 1) * size_t(shape.max_context);
  // The runner addresses entries with int32 flat indices (ModelRunner's page-table writes).
  SEAM_CHECK(table_entries < (size_t(1) << 31), "the page table of ", shape.max_reqs + 1, " rows x ",
             shape.max_context, " columns is too large; lower --max-running-requests or --context-length");
  page_table_ = static_cast<int32_t*>(backend_.alloc(table_entries * 4));
  // Every entry starts at the scratch slot, so a stale or padded read stays in bounds.
  std::vector<int32_t> zeros(table_entries, 0);
  backend_.copy_h2d(page_table_, zeros.data(), table_entries * 4);
  backend_.synchronize();
}

KvPool::~KvPool() {
  backend_.release(kv_);
  backend_.release(page_table_);
}

Tensor KvPool::k_cache(int layer) const {
  const size_t plane = size_t(shape_.n_slots) * shape_.n_kv_heads * shape_.head_dim * dtype_size(shape_.dtype);
  char* base = static_cast<char*>(kv_) + size_t(2 * layer) * plane;
  return Tensor(base, shape_.dtype, backend_.device(), {shape_.n_slots, shape_.n_kv_heads, shape_.head_dim});
}

Tensor KvPool::v_cache(int layer) const {
  Tensor t = k_cache(layer);
  t.data = static_cast<char*>(t.data) + t.nbytes();
  return t;
}

Tensor KvPool::page_table() const {
  return Tensor(page_table_, DType::i32, backend_.device(), {shape_.max_reqs + 1, shape_.max_context});
}

void KvPool::set_slots(int row, int begin, const int32_t* slots, int n) {
  SEAM_ASSERT(row >= 0 && row < shape_.max_reqs && begin >= 0 && begin + n <= shape_.max_context);
  if (n == 0) return;
  backend_.copy_h2d(page_table_ + size_t(row) * shape_.max_context + begin, slots, size_t(n) * 4);
}

}  // namespace seam
