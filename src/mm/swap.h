// Models a swap device's slots (mm/swapfile.c swap_map) and the swap cache
// (mm/swap_state.c): each slot counts the swap PTEs that refer to it and may
// hold the folio that is its cached copy (a folio in the swap cache).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mm/mm_types.h"

namespace mmsim::mm {

struct SwapSlot {
  static constexpr uint32_t kNoFolio = UINT32_MAX;
  uint32_t count = 0;         // swap PTEs referring to it (swap_map's count)
  uint32_t cache = kNoFolio;  // the folio in the swap cache for it, if any
  bool used = false;          // allocated
  Shadow shadow;              // what the last eviction from it left (workingset)
};

class SwapSpace {
 public:
  explicit SwapSpace(uint64_t pages) : slots_(pages) {
    free_.reserve(pages);
    for (uint64_t i = pages; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
  }
  // get_swap_page: a free slot, lowest first; nullopt when the device is full.
  std::optional<uint32_t> alloc() {
    if (free_.empty()) return std::nullopt;
    const uint32_t s = free_.back();
    free_.pop_back();
    slots_[s] = SwapSlot{};
    slots_[s].used = true;
    return s;
  }
  // The slot goes back when no PTE refers to it and no folio caches it.
  void put_if_unused(uint32_t s) {
    SwapSlot& x = slots_[s];
    if (x.used && x.count == 0 && x.cache == SwapSlot::kNoFolio) {
      x.used = false;
      free_.push_back(s);
    }
  }
  SwapSlot& slot(uint32_t s) { return slots_[s]; }
  const SwapSlot& slot(uint32_t s) const { return slots_[s]; }
  uint64_t total() const { return slots_.size(); }
  uint64_t nr_free() const { return free_.size(); }
  // vm_swap_full: more than half the device in use.
  bool full_half() const { return nr_free() * 2 < total(); }

 private:
  std::vector<SwapSlot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace mmsim::mm
