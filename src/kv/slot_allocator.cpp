#include "kv/slot_allocator.h"

#include "core/error.h"

namespace seam {

SlotAllocator::SlotAllocator(int32_t n_slots) : n_slots_(n_slots), in_use_(size_t(n_slots), 0) {
  SEAM_CHECK(n_slots >= 2, "KV pool too small: ", n_slots, " slots");
  free_.reserve(size_t(n_slots));
  for (int32_t s = n_slots - 1; s >= 1; --s) free_.push_back(s);
  in_use_[kScratchSlot] = 1;
}

bool SlotAllocator::alloc(int32_t n, std::vector<int32_t>& out) {
  if (n > n_free()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t s = free_.back();
    free_.pop_back();
    in_use_[size_t(s)] = 1;
    out.push_back(s);
  }
  return true;
}

void SlotAllocator::free(const int32_t* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t s = slots[i];
    SEAM_ASSERT(s > 0 && s < n_slots_ && in_use_[size_t(s)], "freeing KV slot ", s, " that is not in use");
    in_use_[size_t(s)] = 0;
    free_.push_back(s);
  }
}

}  // namespace seam
