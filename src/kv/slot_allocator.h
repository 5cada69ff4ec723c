// SlotAllocator: the page allocator of the KV pool. A page holds one token
// (page size 1, as sglang's default), so pages and token slots are the same
// thing; slot 0 is reserved as the scratch slot that padded rows write to and
// is never handed out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace seam {

class SlotAllocator {
 public:
  explicit SlotAllocator(int32_t n_slots);  // slots 1 .. n_slots-1 are allocatable

  int32_t n_free() const { return int32_t(free_.size()); }
  int32_t capacity() const { return n_slots_ - 1; }
  // Appends n slots to `out`; returns false (and takes nothing) if fewer are free.
  bool alloc(int32_t n, std::vector<int32_t>& out);
  void free(const int32_t* slots, size_t n);
  void free(const std::vector<int32_t>& slots) { free(slots.data(), slots.size()); }

  static constexpr int32_t kScratchSlot = 0;

 private:
  int32_t n_slots_;
  std::vector<int32_t> free_;  // a stack; the lowest slots are handed out first
  std::vector<uint8_t> in_use_;  // catches double frees
};

}  // namespace seam
