#include "mm/mm_types.h"

#include <algorithm>

namespace mmsim::mm {

void AddressSpace::store(uint64_t index, uint32_t pfn) {
  const uint64_t key = index >> kPteTableShift;
  auto& chunk = chunks_[key];
  if (!chunk) {
    chunk = std::make_unique<Chunk>();
    chunk->fill(kNone);
  }
  cached_key_ = key;
  cached_ = chunk.get();
  const uint32_t old = (*chunk)[index & (kPtesPerTable - 1)];
  nrpages += static_cast<uint64_t>(pfn != kNone) - static_cast<uint64_t>(old != kNone);
  (*chunk)[index & (kPtesPerTable - 1)] = pfn;
}

Vma* Mm::find_vma(Vpn v) const {
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), v,
                             [](Vpn x, const std::unique_ptr<Vma>& vma) { return x < vma->start; });
  if (it == vmas_.begin()) return nullptr;
  Vma* vma = std::prev(it)->get();
  return vma->contains(v) ? vma : nullptr;
}

Vma* Mm::find_vma_intersection(Vpn start, Vpn end) const {
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), start,
                             [](Vpn x, const std::unique_ptr<Vma>& vma) { return x < vma->start; });
  if (it != vmas_.begin() && (*std::prev(it))->end > start) return std::prev(it)->get();
  return it != vmas_.end() && (*it)->start < end ? it->get() : nullptr;
}

Vma* Mm::insert_vma(std::unique_ptr<Vma> vma) {
  vma->mm = this;
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), vma->start,
                             [](Vpn x, const std::unique_ptr<Vma>& v) { return x < v->start; });
  return vmas_.insert(it, std::move(vma))->get();
}

Vpn Mm::get_unmapped_area(uint64_t pages, std::optional<uint32_t> huge_offset) const {
  // mmap_base of a 47-bit layout, growing up; leave a guard page between VMAs.
  constexpr uint64_t kHuge = 512;
  auto align = [&](uint64_t v) {
    if (!huge_offset) return v;
    const uint64_t up = ((v + kHuge - 1 - *huge_offset) & ~(kHuge - 1)) + *huge_offset;
    return up;
  };
  uint64_t candidate = align(uint64_t{0x7f0000000000} >> kPageShift);
  for (const auto& vma : vmas_) {
    if (vma->start.v >= candidate + pages + 1) break;
    candidate = std::max(candidate, align(vma->end.v + 1));
  }
  return Vpn(candidate);
}

}  // namespace mmsim::mm
